// The in-process mode's reads from its informers (functions/runtime/object-cache.ts,
// docs/architecture.md decision 56) against the Kubernetes API (local API server or
// TEST_KUBECONFIG), with the foo example controller: a converged Foo's reconcile sends no request;
// a reconcile that created a Deployment the informer has not delivered yet is followed by one that
// reads it live (no second create, no 409, no second status write); a Deployment deleted by
// someone else is created again from the cache. Requests are counted at the client.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, type KubernetesObject } from '@kubernetes/client-node';
import { createLogger } from '../../core/log.ts';
import { fooResource } from '../../examples/foo/controllers/foo/api.ts';
import { fooController } from '../../examples/foo/controllers/foo/index.ts';
import { deployments } from '../../functions/kit/resources.ts';
import {
  CountingKubeConfig,
  startTestCluster,
  type TestCluster,
  writesOf,
} from '../../functions/kit/testing.ts';
import { type InProcess, startInProcess } from '../../functions/runtime/in-process.ts';
import { InformerObjectCache } from '../../functions/runtime/object-cache.ts';
import { reconcileKey } from '../../functions/runtime/reconcile.ts';
import { type CustomObjects, customObjects } from '../support/custom-objects.ts';
import { waitFor } from '../support/wait.ts';

const CRD = new URL('../../examples/foo/controllers/foo/crd.yaml', import.meta.url).pathname;
const { group, version, plural } = fooResource;

/** The requests to objects of `namespace` (the reconciles': the informers watch every namespace). */
const requestsIn = (namespace: string, requests: readonly string[]) =>
  requests.filter((r) => r.includes(`/namespaces/${namespace}/`));

/** The Deployment `namespace/name`, or `undefined` when the API server answers 404. */
const readDeployment = (apps: AppsV1Api, namespace: string, name: string) =>
  apps.readNamespacedDeployment({ namespace, name }).catch((err: { code?: number }) => {
    if (err.code === 404) return undefined;
    throw err;
  });

describe('in-process mode: reads from the informers (integration)', () => {
  let cluster: TestCluster;
  let kc: CountingKubeConfig;
  let apps: AppsV1Api;
  let ns: string;
  let foos: CustomObjects;
  let running: InProcess;
  const lines: Record<string, unknown>[] = [];
  const quiet = createLogger('relay', { write: () => {} });
  /** Outcome lines of `name`'s key. */
  const outcomes = (name: string) =>
    lines.filter(
      (l) =>
        l.outcome !== undefined &&
        (l['logging.googleapis.com/labels'] as { key?: string } | undefined)?.key === `${ns}/${name}`,
    );
  const ofNamespace = (requests: readonly string[]) => requestsIn(ns, requests);
  const deployment = (name: string) => readDeployment(apps, ns, name);

  before(async () => {
    cluster = await startTestCluster();
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    ns = await cluster.createNamespace('cache');
    await cluster.applyCrd(CRD, { group, version, plural }, ns);
    foos = customObjects(cluster.kubeConfig, { group, version, plural, kind: 'Foo' }, ns);
    kc = new CountingKubeConfig();
    kc.loadFromFile(cluster.kubeconfigPath);
    running = await startInProcess({
      kubeConfig: kc,
      controllers: [fooController],
      workers: 2,
      port: 0,
      host: '127.0.0.1',
      logger: quiet,
      reconcileLogger: createLogger('functions', { write: (s: string) => void lines.push(JSON.parse(s)) }),
    });
    await running.relay.whenReady();
  });

  after(async () => {
    await running?.stop();
    await cluster?.stop();
  });

  /** Creates the Foo `name` and waits until it is converged: its Deployment, its status, its queue idle. */
  const convergedFoo = async (name: string) => {
    await foos.create(name, { deploymentName: name, replicas: 1 });
    await waitFor(
      async () =>
        (await foos.get(name)).status?.observedGeneration === 1 && (await deployment(name)) !== undefined,
      { message: `Foo ${name} converged` },
    );
    const queue = running.queues.get('foo');
    await waitFor(() => queue?.length === 0 && running.cache?.pendingWrites === 0, { message: 'queue idle' });
  };

  it("reconciles a converged Foo without a request: the Foo and its Deployments come from the informers' cache", async () => {
    await convergedFoo('quiet');
    const seen = outcomes('quiet').length;
    kc.requests = [];
    running.queues.get('foo')?.add(`${ns}/quiet`);
    await waitFor(() => outcomes('quiet').length > seen, { message: 'one more reconcile' });
    assert.equal(outcomes('quiet').at(-1)?.outcome, 'success');
    // Before (every read live): GET the Foo, LIST its Deployments.
    assert.deepEqual(ofNamespace(kc.requests), []);
    // What the cache holds of this namespace (a real cluster's other namespaces are in it too).
    assert.equal(running.cache?.get(fooResource, ns, 'quiet')?.object?.metadata?.name, 'quiet');
    assert.deepEqual(
      running.cache?.list(deployments, ns)?.map((d) => d.metadata?.name),
      ['quiet'],
    );
  });

  it('repairs a Deployment deleted by someone else: the deletion reaches the cache before its key', async () => {
    await convergedFoo('repaired');
    const before = await deployment('repaired');
    await apps.deleteNamespacedDeployment({ namespace: ns, name: 'repaired' });
    await waitFor(
      async () => {
        const now = await deployment('repaired');
        return now !== undefined && now.metadata?.uid !== before?.metadata?.uid;
      },
      { message: 'Deployment created again' },
    );
  });
});

// Without the mode running (its workers would reconcile the same key): the workers' reconcile
// over a cache whose informers are driven by the test.
describe('in-process mode: read-your-writes over a lagging cache (integration)', () => {
  let cluster: TestCluster;
  let apps: AppsV1Api;
  let ns: string;
  let foos: CustomObjects;
  const quiet = createLogger('relay', { write: () => {} });
  const ofNamespace = (requests: readonly string[]) => requestsIn(ns, requests);
  const deployment = (name: string) => readDeployment(apps, ns, name);

  before(async () => {
    cluster = await startTestCluster();
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    ns = await cluster.createNamespace('cache-rw');
    await cluster.applyCrd(CRD, { group, version, plural }, ns);
    foos = customObjects(cluster.kubeConfig, { group, version, plural, kind: 'Foo' }, ns);
  });

  after(async () => {
    await cluster?.stop();
  });

  it('reads live what it wrote until the informer has delivered it: no second create, no 409, no second status write', async () => {
    await foos.create('lagging', { deploymentName: 'lagging', replicas: 1 });
    // The reconcile of the workers, over a cache whose informers lag: the Foo as it was created,
    // no Deployment; neither informer delivers anything more until told.
    const cache = new InformerObjectCache([fooController]);
    const fooStore = cache.sinkFor({ resource: fooResource });
    const deploymentStore = cache.sinkFor({ resource: deployments });
    assert.ok(fooStore && deploymentStore);
    fooStore.put((await foos.get('lagging')) as KubernetesObject);
    fooStore.synced();
    deploymentStore.synced();
    const counting = new CountingKubeConfig();
    counting.loadFromFile(cluster.kubeconfigPath);
    const reconcile = async () => {
      counting.requests = [];
      const { outcome } = await reconcileKey(
        new Map([[fooController.name, fooController]]),
        fooController.name,
        { namespace: ns, name: 'lagging' },
        { kubeConfig: () => counting, log: quiet, retriedBy: 'the test', cache },
      );
      assert.equal(outcome, 'success');
      return ofNamespace(counting.requests).filter(
        (r) => !r.startsWith('POST /api/v1/namespaces/') || !r.endsWith('/events'),
      );
    };
    const first = await reconcile();
    assert.ok(first.includes(`POST /apis/apps/v1/namespaces/${ns}/deployments`), first.join('\n'));
    assert.equal(cache.pendingWrites > 0, true, 'the writes are awaited');
    // The next reconcile of the key, before either informer caught up: it reads the Foo and the
    // Deployments live, and writes nothing (with the cache's stale answers: a POST answered 409, a status patch).
    const second = await reconcile();
    assert.deepEqual(writesOf(second), [], second.join('\n'));
    assert.deepEqual(
      second.map((r) => r.replace(/\?.*/, '')),
      [
        `GET /apis/${group}/${version}/namespaces/${ns}/foos/lagging`,
        `GET /apis/apps/v1/namespaces/${ns}/deployments`,
      ],
    );
    // The informers deliver: the cache answers again.
    fooStore.put((await foos.get('lagging')) as KubernetesObject);
    deploymentStore.put({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      ...(await deployment('lagging')),
    } as KubernetesObject);
    assert.equal(cache.pendingWrites, 0);
    assert.deepEqual(await reconcile(), []);
  });
});
