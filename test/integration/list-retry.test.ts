/**
 * A paginated LIST (core/k8s/list.ts) survives the API server's 429s and 500s on a page, as
 * client-go's rest client does, instead of failing the whole enumeration. Found by the soak
 * (soak/run.ts): a resync whose LIST met one injected 429 answered 500 and published none of the
 * secret replicator's keys until the next resync. Against the local API server (its fault injection).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { listMetadataPaged, listPaged, PAGE_ATTEMPTS } from '../../core/k8s/list.ts';
import { configmaps } from '../../functions/kit/resources.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';

/** Every item an async iterable yields, in order. */
async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const all: T[] = [];
  for await (const item of items) all.push(item);
  return all;
}

describe('a paginated LIST retries a page the API server answered 429 or 5xx', {
  skip: !!process.env.TEST_KUBECONFIG && 'the local API server injects the failures',
}, () => {
  let cluster: TestCluster;
  let ns: string;
  const names = ['a', 'b', 'c'];

  before(async () => {
    cluster = await startTestCluster();
    ns = await cluster.createNamespace('list-retry');
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    for (const name of names)
      await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } });
  });
  after(() => cluster?.stop());

  const faults = () => {
    if (!cluster.local) throw new Error('the local API server only');
    return cluster.local.faults;
  };
  const ours = (items: { metadata?: { namespace?: string; name?: string } }[]) =>
    items
      .filter((o) => o.metadata?.namespace === ns && names.includes(o.metadata?.name ?? ''))
      .map((o) => o.metadata?.name)
      .sort();

  it('waits for Retry-After on 429, and lists everything', async () => {
    faults().failNext({ verb: 'list', resource: 'configmaps' }, 2, { status: 429, retryAfterSeconds: 1 });
    const started = Date.now();
    const items = await collect(listMetadataPaged(cluster.kubeConfig, configmaps));
    assert.deepEqual(ours(items), names);
    assert.ok(
      Date.now() - started >= 1900,
      `listed after ${Date.now() - started} ms: Retry-After not honoured`,
    );
  });

  it('retries 500s with a backoff', async () => {
    faults().failNext({ verb: 'list', resource: 'configmaps' }, PAGE_ATTEMPTS - 1, { status: 500 });
    const items = await collect(listPaged(cluster.kubeConfig, configmaps, { namespace: ns }));
    assert.deepEqual(ours(items), names);
  });

  it('gives up after its attempts, and never retries what would fail again', async () => {
    const remove = faults().failNext({ verb: 'list', resource: 'configmaps' }, PAGE_ATTEMPTS, {
      status: 503,
      retryAfterSeconds: null,
    });
    await assert.rejects(collect(listPaged(cluster.kubeConfig, configmaps, { namespace: ns })), {
      code: 503,
    });
    remove();
    faults().failNext({ verb: 'list', resource: 'configmaps' }, 1, { status: 403 });
    const started = Date.now();
    await assert.rejects(collect(listPaged(cluster.kubeConfig, configmaps, { namespace: ns })), {
      code: 403,
    });
    assert.ok(Date.now() - started < 1000);
    // The 403 rule was consumed by its one request: the next LIST answers.
    assert.deepEqual(
      ours(await collect(listPaged(cluster.kubeConfig, configmaps, { namespace: ns }))),
      names,
    );
  });
});
