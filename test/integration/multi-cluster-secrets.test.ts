/**
 * Cross-cluster Secret replication end to end, on real parts: two local API servers, a relay in
 * each (`RELAY_CLUSTER`), one Pub/Sub emulator topic, one `reconcile` and one `resync` serving both
 * (`LEVELSET_CLUSTERS`). A source in cluster A annotated `levelset.dev/replicate-to-clusters` is
 * copied into cluster B, updated there, never overwrites a foreign Secret of B (a Warning Event on
 * the source says so), is restored when its copy in B is deleted or edited (B's relay maps the copy
 * back to the source's key in A), and its copies in B are pruned when the annotation goes or the
 * source goes; a missed delete in B and a source deleted while A's relay was down are both fixed by
 * the resync. A source without the annotation writes nothing to B.
 *
 * Two local API servers; with `TEST_KUBECONFIG` set, `TEST_KUBECONFIG_2` must name a second
 * cluster, else the file is skipped.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import { LABELS } from '../../core/log.ts';
import {
  REPLICATE_TO_ANNOTATION,
  REPLICATE_TO_CLUSTERS_ANNOTATION,
  SOURCE_ANNOTATION,
  SOURCE_CLUSTER_ANNOTATION,
} from '../../functions/controllers/secret-replicator/plan.ts';
import {
  secondClusterSkip,
  startSecondTestCluster,
  startTestCluster,
  type TestCluster,
  uniqueSuffix,
} from '../../functions/kit/testing.ts';
import type { LogLine } from '../../local/service.ts';
import { type LocalStack, startLocalStack } from '../../local/stack.ts';
import { stackFaults } from '../../local/stack-faults.ts';
import { waitFor } from '../support/wait.ts';

const A = 'cluster-a';
const B = 'cluster-b';
const run = uniqueSuffix();

const skip = secondClusterSkip;

const encode = (s: string) => Buffer.from(s).toString('base64');
const decoded = (s: V1Secret | undefined) => Buffer.from(s?.data?.password ?? '', 'base64').toString();

describe('cross-cluster Secret replication (serverless, two clusters)', { skip }, () => {
  const clusters = new Map<string, TestCluster>();
  const logs: { service: string; line: LogLine }[] = [];
  let stack: LocalStack;
  let source: string;
  let target: string;
  const core = (id: string) => (clusters.get(id) as TestCluster).kubeConfig.makeApiClient(CoreV1Api);
  const read = (id: string, namespace: string, name: string) =>
    core(id)
      .readNamespacedSecret({ namespace, name })
      .catch((err: { code?: number }) => {
        if (err.code === 404) return undefined;
        throw err;
      });
  /** A source Secret in cluster A, narrowed to this run's target namespaces (none in A). */
  const sourceSecret = (name: string, value: string, toClusters?: string): V1Secret => ({
    metadata: {
      name,
      namespace: source,
      labels: { app: 'db' },
      annotations: {
        [REPLICATE_TO_ANNOTATION]: `xc-${run}-.*`,
        ...(toClusters !== undefined ? { [REPLICATE_TO_CLUSTERS_ANNOTATION]: toClusters } : {}),
      },
    },
    type: 'Opaque',
    data: { password: encode(value) },
  });
  const copyInB = (name: string, value: string) =>
    waitFor(
      async () => {
        const copy = await read(B, target, name);
        return copy && decoded(copy) === value ? copy : undefined;
      },
      { message: `the copy of ${name} = ${value} in cluster B` },
    );
  const goneFromB = (name: string) =>
    waitFor(async () => (await read(B, target, name)) === undefined, {
      message: `no copy of ${name} in cluster B`,
    });
  const outcomes = (cluster: string, key: string) =>
    logs.filter(({ service, line }) => {
      const labels = (line[LABELS] ?? {}) as { cluster?: string; controller?: string; key?: string };
      return (
        service === 'reconcile' &&
        typeof line.outcome === 'string' &&
        labels.controller === 'secret-replicator' &&
        labels.cluster === cluster &&
        labels.key === key
      );
    });

  /** Keys of the replicator the relay of cluster `id` has published (its `/metrics`). */
  const publishedBy = async (id: string) => {
    const relay = stack.relay(id);
    if (!relay) throw new Error(`no relay in ${id}`);
    const text = await (await fetch(new URL('/metrics', relay.url))).text();
    const line = text.match(
      /^levelset_relay_keys_published_total\{[^}]*controller="secret-replicator"[^}]*\} (\S+)/m,
    );
    return Number(line?.[1] ?? 0);
  };

  before(async () => {
    clusters.set(A, await startTestCluster());
    clusters.set(B, await startSecondTestCluster());
    source = await (clusters.get(A) as TestCluster).createNamespace(`xc-src-${run}`);
    target = await (clusters.get(B) as TestCluster).createNamespace(`xc-${run}-team`);
    stack = await startLocalStack({
      kubeconfigPath: (clusters.get(A) as TestCluster).kubeconfigPath,
      clusters: [...clusters].map(([id, c]) => ({ id, kubeconfigPath: c.kubeconfigPath })),
      env: { LEVELSET_SOURCE_NAMESPACE: source },
      collapseMs: 50,
      onLog: (service, line) => {
        logs.push({ service, line });
        if (process.env.LEVELSET_TEST_VERBOSE) process.stderr.write(`[${service}] ${JSON.stringify(line)}\n`);
      },
    });
  });

  after(async () => {
    await stack?.stop();
    for (const c of clusters.values()) await c.stop();
  });

  it('copies a source annotated for cluster B into B, marked with its cluster, and updates the copy', async () => {
    await core(A).createNamespacedSecret({ namespace: source, body: sourceSecret('db', 'v1', B) });
    const copy = await copyInB('db', 'v1');
    assert.equal(copy.metadata?.annotations?.[SOURCE_ANNOTATION], `${source}/db`);
    assert.equal(copy.metadata?.annotations?.[SOURCE_CLUSTER_ANNOTATION], A);
    assert.equal(copy.metadata?.labels?.app, 'db');
    const live = await core(A).readNamespacedSecret({ namespace: source, name: 'db' });
    live.data = { password: encode('v2') };
    await core(A).replaceNamespacedSecret({ namespace: source, name: 'db', body: live });
    await copyInB('db', 'v2');
  });

  it('a source without the annotation writes nothing to cluster B', async () => {
    await core(A).createNamespacedSecret({ namespace: source, body: sourceSecret('local-only', 'x') });
    await waitFor(() => outcomes(A, `${source}/local-only`).some(({ line }) => line.outcome === 'success'), {
      message: "cluster A's key local-only reconciled",
    });
    assert.equal(await read(B, target, 'local-only'), undefined);
  });

  it('never overwrites a foreign Secret of the same name in cluster B: a Warning Event on the source says so', async () => {
    const foreign = await core(B).createNamespacedSecret({
      namespace: target,
      body: { metadata: { name: 'taken' }, type: 'Opaque', data: { password: encode('theirs') } },
    });
    await core(A).createNamespacedSecret({ namespace: source, body: sourceSecret('taken', 'ours', B) });
    const event = await waitFor(
      async () =>
        (await core(A).listNamespacedEvent({ namespace: source })).items.find(
          (e) => e.involvedObject.name === 'taken' && e.reason === 'ErrResourceExists',
        ),
      { message: 'a Warning ErrResourceExists Event on the source in cluster A' },
    );
    assert.equal(event.type, 'Warning');
    assert.match(event.message ?? '', new RegExp(`in cluster ${B} in namespace\\(s\\) ${target}`));
    const after = await read(B, target, 'taken');
    assert.equal(after?.metadata?.resourceVersion, foreign.metadata?.resourceVersion, 'untouched');
    assert.equal(decoded(after), 'theirs');
    // Deleting the source prunes nothing of B's: the Secret is not a copy.
    await core(A).deleteNamespacedSecret({ namespace: source, name: 'taken' });
    await waitFor(() => outcomes(A, `${source}/taken`).some(({ line }) => line.notFound === true), {
      message: "the source taken's deletion reconciled",
    });
    assert.equal(decoded(await read(B, target, 'taken')), 'theirs');
  });

  it("restores a copy deleted or edited in cluster B (B's relay maps it back to the source in A)", async () => {
    await copyInB('db', 'v2');
    const published = () => publishedBy(B);
    const before = await published();
    await core(B).deleteNamespacedSecret({ namespace: target, name: 'db' });
    await copyInB('db', 'v2');
    assert.ok((await published()) > before, "cluster B's relay published the key that restored it");
    const copy = (await read(B, target, 'db')) as V1Secret;
    copy.data = { password: encode('tampered') };
    await core(B).replaceNamespacedSecret({ namespace: target, name: 'db', body: copy });
    await copyInB('db', 'v2');
  });

  it('a missed delete in cluster B is fixed by the resync of the source', async () => {
    await stackFaults(stack).killRelay(B);
    await core(B).deleteNamespacedSecret({ namespace: target, name: 'db' });
    const report = await stack.runResync();
    assert.ok(!report.controllers['secret-replicator']?.error, JSON.stringify(report));
    await copyInB('db', 'v2');
    await stack.startRelay({}, B);
  });

  it('prunes the copy in cluster B when cluster B leaves the annotation', async () => {
    await core(A).createNamespacedSecret({
      namespace: source,
      body: sourceSecret('leaving', 'l', `${B},nowhere`),
    });
    await copyInB('leaving', 'l');
    const live = await core(A).readNamespacedSecret({ namespace: source, name: 'leaving' });
    live.metadata = { ...live.metadata, annotations: { [REPLICATE_TO_ANNOTATION]: `xc-${run}-.*` } };
    await core(A).replaceNamespacedSecret({ namespace: source, name: 'leaving', body: live });
    await goneFromB('leaving');
  });

  it('prunes the copy in cluster B when the source goes', async () => {
    await core(A).deleteNamespacedSecret({ namespace: source, name: 'db' });
    await goneFromB('db');
  });

  it("a source deleted while cluster A's relay was down: the resync of B prunes its copy", async () => {
    await core(A).createNamespacedSecret({
      namespace: source,
      body: sourceSecret('orphan', 'o', 'cluster-*'),
    });
    await copyInB('orphan', 'o');
    await stackFaults(stack).killRelay(A);
    await core(A).deleteNamespacedSecret({ namespace: source, name: 'orphan' });
    const report = await stack.runResync();
    assert.ok(!report.controllers['secret-replicator']?.error, JSON.stringify(report));
    await goneFromB('orphan');
    await stack.startRelay({}, A);
  });

  it("cluster A's keys wrote nothing to cluster B but the declared copies", async () => {
    const secrets = (await core(B).listNamespacedSecret({ namespace: target })).items;
    assert.deepEqual(secrets.map((s) => s.metadata?.name).sort(), ['taken']);
    // Every key of cluster A ran against A, and B's keys named no source of A.
    assert.ok(outcomes(B, `${source}/db`).length === 0, 'no key of the source in cluster B');
  });
});
