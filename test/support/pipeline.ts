/**
 * The end-to-end fixture: a cluster (local API server, or `TEST_KUBECONFIG`) plus the whole local
 * stack (Pub/Sub emulator, both functions under functions-framework, the relay) pointed at it.
 */

import type { LocalApiServerOptions } from '../../local/apiserver/index.ts';
import type { LogLine } from '../../local/service.ts';
import { type LocalStack, type LocalStackOptions, startLocalStack } from '../../local/stack.ts';
import { startTestCluster, type TestCluster } from './cluster.ts';
import { createLeastPrivilegedIdentities, type Identities } from './identities.ts';

export interface Pipeline {
  cluster: TestCluster;
  stack: LocalStack;
  /** Every log line of every process, tagged with the process name. */
  logs: { service: string; line: LogLine }[];
  /** The relay's and the functions' least-privileged identities; `undefined` with `admin: true`. */
  identities?: Identities;
  stop(): Promise<void>;
}

/**
 * Starts cluster and stack. The relay and the functions run least-privileged: each with a
 * ServiceAccount token bound to its ClusterRole from the generated `deploy/rbac.yaml` (see
 * `identities.ts`); `setup` and the test itself use the cluster admin. `admin: true` runs the
 * processes as the admin instead. `LEVELSET_TEST_VERBOSE=1` echoes every log line to stderr.
 * @param setup arranges the cluster and returns controller configuration for the stack (e.g. the source namespace).
 * @param clusterOptions options of the local API server (e.g. a short bookmark interval).
 */
export async function startPipeline(
  setup: (cluster: TestCluster) => Promise<Record<string, string>>,
  options: Partial<LocalStackOptions> & { admin?: boolean } = {},
  clusterOptions: LocalApiServerOptions = {},
): Promise<Pipeline> {
  const cluster = await startTestCluster(clusterOptions);
  const logs: Pipeline['logs'] = [];
  let identities: Identities | undefined;
  try {
    const env = await setup(cluster);
    if (!options.admin) identities = await createLeastPrivilegedIdentities(cluster.kubeConfig);
    const stack = await startLocalStack({
      kubeconfigPath: cluster.kubeconfigPath,
      relayKubeconfigPath: identities?.relay.kubeconfigPath,
      functionsKubeconfigPath: identities?.functions.kubeconfigPath,
      env,
      collapseMs: 50,
      ...options,
      onLog: (service, line) => {
        logs.push({ service, line });
        if (process.env.LEVELSET_TEST_VERBOSE) process.stderr.write(`[${service}] ${JSON.stringify(line)}\n`);
      },
    });
    return {
      cluster,
      stack,
      logs,
      identities,
      async stop() {
        await stack.stop();
        await identities?.remove();
        await cluster.stop();
      },
    };
  } catch (err) {
    await identities?.remove();
    await cluster.stop();
    throw err;
  }
}

/** Pub/Sub push envelope for a key message, as the subscription POSTs it to `reconcile`. */
export function pushEnvelope(message: object, messageId = String(Date.now())): object {
  return {
    message: {
      data: Buffer.from(JSON.stringify(message)).toString('base64'),
      attributes: {},
      messageId,
      publishTime: new Date().toISOString(),
    },
    subscription: 'projects/local-project/subscriptions/test',
  };
}

/**
 * Sums the series of one of the running relay's Prometheus counters or gauges (its `/metrics`) whose
 * label set contains `labels` (e.g. `controller="foo"`; `''` matches every series, unlabelled ones too).
 * @throws {Error} when the relay is not running
 */
export async function relayCounter(p: Pipeline, metric: string, labels: string): Promise<number> {
  const relay = p.stack.relay();
  if (!relay) throw new Error('the relay is not running');
  const text = await (await fetch(new URL('/metrics', relay.url))).text();
  let sum = 0;
  for (const m of text.matchAll(new RegExp(`^${metric}(?:\\{([^}]*)\\})? (\\S+)`, 'gm'))) {
    if ((m[1] ?? '').includes(labels)) sum += Number(m[2]);
  }
  return sum;
}

/**
 * The Secret values that occur in any of `haystacks`, plainly or base64-encoded (standard and URL
 * alphabets, as a whole value). Used to check that no log line, Event or answer carries Secret data.
 */
export function leakedSecretValues(haystacks: readonly string[], values: readonly string[]): string[] {
  const forms = values.flatMap((v) => {
    const b = Buffer.from(v);
    return [
      [v, v],
      [v, b.toString('base64')],
      [v, b.toString('base64url')],
      [v, JSON.stringify(v).slice(1, -1)],
    ] as const;
  });
  const leaked = new Set<string>();
  for (const text of haystacks)
    for (const [value, form] of forms)
      if (text.includes(form)) leaked.add(`${value} (as ${form === value ? 'plain' : form})`);
  return [...leaked];
}
