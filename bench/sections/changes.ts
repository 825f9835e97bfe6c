/**
 * The workloads several sections time: an API write, then the bench's own watch seeing its result
 * (a Secret's copies, a Foo's Deployment, Foos Ready).
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import { REPLICATE_TO_ANNOTATION } from '../../functions/controllers/secret-replicator/plan.ts';
import type { ApiServer } from '../environment.ts';
import { FOOS, isReady, merge, now, type ObjectWatch, pool } from '../support.ts';

/** A change: the controller and key it enqueues, when it was written and seen converged (epoch ms). */
export interface TimedChange {
  controller: string;
  key: string;
  t0: number;
  at: number;
}

/** A change as made: `at` undefined when not seen converged within the timeout; `rv` the written resourceVersion. */
export type Change = Omit<TimedChange, 'at'> & { at: number | undefined; rv?: string };

/**
 * Creates Secrets `names` in `source`, each replicated (the secret replicator's annotation) into the
 * namespaces `targets`, and waits until `secrets`, a watch of every Secret, sees each one copied.
 * Returns the `i`-th change: Secret `names[i % names.length]`'s data set to `i`, seen when every
 * copy has it (30 s at most).
 */
export async function replicatedSecrets(
  api: ApiServer,
  secrets: ObjectWatch,
  source: string,
  targets: readonly string[],
  names: readonly string[],
): Promise<(i: number) => Promise<Change>> {
  const data = (v: string) => ({ v: Buffer.from(v).toString('base64') });
  const value = (o: KubernetesObject | undefined) =>
    Buffer.from((o as { data?: Record<string, string> } | undefined)?.data?.v ?? '', 'base64').toString();
  const copiesAre = (name: string, v: string) => () =>
    targets.every((t) => value(secrets.get(t, name)) === v);
  const annotations = { [REPLICATE_TO_ANNOTATION]: 'bench-target-.*' };
  for (const name of names)
    await api.core.createNamespacedSecret({
      namespace: source,
      body: { metadata: { name, namespace: source, annotations }, data: data('0') },
    });
  for (const name of names) await secrets.until(copiesAre(name, '0'));
  return async (i) => {
    const name = names[i % names.length] as string;
    const t0 = now();
    const patched = await api.core.patchNamespacedSecret(
      { namespace: source, name, body: { data: data(String(i)) } },
      merge,
    );
    const at = await secrets.until(copiesAre(name, String(i)), 30_000).catch(() => undefined);
    const rv = patched.metadata?.resourceVersion ?? '';
    return { controller: 'secret-replicator', key: `${source}/${name}`, t0, at, rv };
  };
}

/**
 * Creates Foos `names` in `namespace` and waits until `deployments`, a watch of every Deployment,
 * sees each one's Deployment. Returns the `i`-th change: Foo `names[i % names.length]`'s
 * spec.replicas set to a value it does not have yet (it changes every time its name comes round
 * again), seen when its Deployment has it (`timeoutMs` at most).
 */
export async function scaledFoos(
  api: ApiServer,
  deployments: ObjectWatch,
  namespace: string,
  names: readonly string[],
): Promise<(i: number, timeoutMs: number) => Promise<Change>> {
  const replicasAre = (name: string, r: number) => () =>
    (deployments.get(namespace, name) as { spec?: { replicas?: number } } | undefined)?.spec?.replicas === r;
  for (const name of names) await api.createFoo(namespace, name);
  for (const name of names) await deployments.until(replicasAre(name, 1));
  return async (i, timeoutMs) => {
    const name = names[i % names.length] as string;
    const replicas = (Math.floor(i / names.length) % 4) + 2;
    const t0 = now();
    await api.custom.patchNamespacedCustomObject(
      { ...FOOS, namespace, name, body: { spec: { replicas } } },
      merge,
    );
    const at = await deployments.until(replicasAre(name, replicas), timeoutMs).catch(() => undefined);
    return { controller: 'foo', key: `${namespace}/${name}`, t0, at };
  };
}

/**
 * Creates Foos `names` in `namespace`, `concurrency` at a time, and resolves when `foos`, a watch of
 * Foos, sees every one Ready: that time (epoch ms).
 */
export async function foosReady(
  api: ApiServer,
  foos: ObjectWatch,
  namespace: string,
  names: readonly string[],
  concurrency: number,
): Promise<number> {
  const ready = () => {
    let n = 0;
    for (const o of foos.all()) if (o.metadata?.namespace === namespace && isReady(o)) n++;
    return n === names.length;
  };
  await pool(names, concurrency, (name) => api.createFoo(namespace, name));
  return foos.until(ready, 600_000);
}
