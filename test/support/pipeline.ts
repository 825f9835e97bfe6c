/**
 * The end-to-end fixture: a cluster (local API server, or `TEST_KUBECONFIG`) plus the whole local
 * stack (Pub/Sub emulator, both functions under functions-framework, the relay) pointed at it.
 */

import type { LocalApiServerOptions } from '../../local/apiserver/index.ts';
import type { LogLine } from '../../local/service.ts';
import { type LocalStack, type LocalStackOptions, startLocalStack } from '../../local/stack.ts';
import { startTestCluster, type TestCluster } from './cluster.ts';

export interface Pipeline {
  cluster: TestCluster;
  stack: LocalStack;
  /** Every log line of every process, tagged with the process name. */
  logs: { service: string; line: LogLine }[];
  stop(): Promise<void>;
}

/**
 * Starts cluster and stack. `LEVELSET_TEST_VERBOSE=1` echoes every log line to stderr.
 * @param setup arranges the cluster; returns controller configuration for the stack (e.g. the source namespace).
 * @param clusterOptions options of the local API server (e.g. a short bookmark interval).
 */
export async function startPipeline(
  setup: (cluster: TestCluster) => Promise<Record<string, string>>,
  options: Partial<LocalStackOptions> = {},
  clusterOptions: LocalApiServerOptions = {},
): Promise<Pipeline> {
  const cluster = await startTestCluster(clusterOptions);
  const logs: Pipeline['logs'] = [];
  try {
    const env = await setup(cluster);
    const stack = await startLocalStack({
      kubeconfigPath: cluster.kubeconfigPath,
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
      async stop() {
        await stack.stop();
        await cluster.stop();
      },
    };
  } catch (err) {
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
