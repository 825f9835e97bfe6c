/**
 * The demo `npm start` plays in the embedded cluster: a source Secret, a few namespaces, then
 * live changes (a new namespace, an update of the source) so that each step of the replication
 * shows, with a check of the result after each.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
} from '@kubernetes/client-node';
import { waitFor } from '../functions/kit/wait.ts';
import { repoRoot } from './service.ts';

const SECRET = 'demo-credentials';
/** The namespace the demo applies the controllers' examples into (README's `levelset reconcile foo demo/example-foo`). */
export const DEMO_NAMESPACE = 'demo';
const encode = (s: string) => Buffer.from(s).toString('base64');

/** The upstream example object `file` of the tutorial of the example project `example`, as its tests apply it. */
function upstreamExample(example: string, file: string): KubernetesObject {
  const [object] = loadAllYaml(
    readFileSync(join(repoRoot, 'examples', example, 'test', 'fixtures', 'upstream', file), 'utf8'),
  );
  return object as KubernetesObject;
}

async function createIfAbsent(api: KubernetesObjectApi, object: KubernetesObject): Promise<void> {
  await api.create(object).catch((err: { code?: number }) => {
    if (err.code !== 409) throw err;
  });
}

async function ensureNamespace(core: CoreV1Api, name: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name } } }).catch((err: { code?: number }) => {
    if (err.code !== 409) throw err;
  });
}

async function copiesIn(core: CoreV1Api, namespaces: string[], version: string): Promise<boolean> {
  const copies = await Promise.all(
    namespaces.map((namespace) =>
      core.readNamespacedSecret({ namespace, name: SECRET }).catch(() => undefined),
    ),
  );
  return copies.every((c) => c?.data?.version === encode(version));
}

/**
 * Creates each of `crds` the cluster lacks (`kubectl create` of the project's CRDs, as kubebuilder's
 * `make install`); one already there is left as it is. Any objects alike (the project's admission
 * policies and bindings).
 */
export async function installCrds(kubeConfig: KubeConfig, crds: readonly KubernetesObject[]): Promise<void> {
  const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
  for (const crd of crds) await createIfAbsent(objects, crd);
}

/**
 * `before`: namespaces and the source Secret, made before the relay starts (its initial list finds
 * them). `after`: live changes, each followed by a check printed through `say`.
 * @throws when a step does not converge within 30 s.
 */
export async function seedDemo(
  kubeConfig: KubeConfig,
  sourceNamespace: string,
  phase: 'before' | 'after',
  say: (line: string) => void = () => {},
): Promise<void> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  if (phase === 'before') {
    for (const ns of [sourceNamespace, 'team-a', 'team-b', DEMO_NAMESPACE]) await ensureNamespace(core, ns);
    await core
      .createNamespacedSecret({
        namespace: sourceNamespace,
        body: {
          metadata: { name: SECRET, labels: { app: 'demo' } },
          type: 'Opaque',
          data: { username: encode('demo'), password: encode('change-me'), version: encode('1') },
        },
      })
      .catch((err: { code?: number }) => {
        if (err.code !== 409) throw err;
      });
    return;
  }
  const step = async (what: string, namespaces: string[], version: string) => {
    const started = Date.now();
    await waitFor(() => copiesIn(core, namespaces, version), { timeoutMs: 30_000, message: what });
    say(`demo        ✓ ${what} (${Date.now() - started} ms)`);
  };
  say(`demo        source Secret ${sourceNamespace}/${SECRET} exists; namespaces team-a, team-b`);
  await step(`${SECRET} v1 copied into team-a, team-b`, ['team-a', 'team-b'], '1');
  say('demo        creating namespace team-c');
  await ensureNamespace(core, 'team-c');
  await step(`${SECRET} copied into the new namespace team-c`, ['team-c'], '1');
  say(`demo        updating ${sourceNamespace}/${SECRET} to v2`);
  const source = await core.readNamespacedSecret({ namespace: sourceNamespace, name: SECRET });
  source.data = { ...source.data, version: encode('2') };
  await core.replaceNamespacedSecret({ namespace: sourceNamespace, name: SECRET, body: source });
  await step(`${SECRET} v2 reached every copy`, ['team-a', 'team-b', 'team-c'], '2');
  await customResourcesDemo(kubeConfig, say);
  say('demo        done; the pipeline keeps running. Try:');
  say(`              kubectl --kubeconfig .levelset/kubeconfig create namespace team-d`);
  say(`              kubectl --kubeconfig .levelset/kubeconfig get secrets -A -l levelset.dev/replica-of`);
  say('              kubectl --kubeconfig .levelset/kubeconfig get nodes');
  say(
    '              kubectl --kubeconfig .levelset/kubeconfig -n demo get foos,icecreams,deployments,cc,pods -o wide',
  );
  say(
    `              kubectl --kubeconfig .levelset/kubeconfig -n demo patch icecream example-icecream --type=merge -p '{"spec":{"replicas":3}}'`,
  );
  say(
    `              kubectl --kubeconfig .levelset/kubeconfig -n demo patch cc cpod-f --type=merge -p '{"spec":{"count":2}}'`,
  );
}

/**
 * The sample-controller Foo, the Customcluster and the Icecream examples, applied unchanged into
 * namespace `demo`; the simulated node makes their Deployments roll out and their Pods run on nodes.
 */
async function customResourcesDemo(kubeConfig: KubeConfig, say: (line: string) => void): Promise<void> {
  const objects = KubernetesObjectApi.makeApiClient(kubeConfig);
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const custom = kubeConfig.makeApiClient(CustomObjectsApi);
  const withNamespace = (o: KubernetesObject) => ({
    ...o,
    metadata: { ...o.metadata, namespace: DEMO_NAMESPACE },
  });
  const timed = async <T>(what: string, probe: () => Promise<T | undefined | false>) => {
    const started = Date.now();
    await waitFor(probe, { timeoutMs: 30_000, message: what });
    say(`demo        ✓ ${what} (${Date.now() - started} ms)`);
  };
  say('demo        applying kubernetes/sample-controller example-foo.yaml into namespace demo');
  await createIfAbsent(objects, withNamespace(upstreamExample('foo', 'sample-controller-example-foo.yaml')));
  await timed('Foo example-foo owns Deployment example-foo, status.availableReplicas = 1', async () => {
    const foo = (await custom.getNamespacedCustomObject({
      group: 'samplecontroller.k8s.io',
      version: 'v1alpha1',
      namespace: DEMO_NAMESPACE,
      plural: 'foos',
      name: 'example-foo',
    })) as { status?: { availableReplicas?: number } };
    const deployment = await apps.readNamespacedDeployment({
      namespace: DEMO_NAMESPACE,
      name: 'example-foo',
    });
    return deployment.metadata?.ownerReferences?.[0]?.kind === 'Foo' && foo.status?.availableReplicas === 1;
  });
  say('demo        applying the Customcluster example cpod-f (count: 5) into namespace demo');
  await createIfAbsent(
    objects,
    withNamespace(upstreamExample('customcluster', 'customcluster-example.yaml')),
  );
  await timed('Customcluster cpod-f runs 5 pods, status.count = 5', async () => {
    const cc = (await custom.getNamespacedCustomObject({
      group: 'sde.dev',
      version: 'v1alpha1',
      namespace: DEMO_NAMESPACE,
      plural: 'customclusters',
      name: 'cpod-f',
    })) as { status?: { count?: number } };
    return cc.status?.count === 5;
  });
  say('demo        applying the Icecream tutorial example example-icecream into namespace demo');
  await createIfAbsent(objects, withNamespace(upstreamExample('icecream', 'icecream-example.yaml')));
  await timed('Icecream example-icecream: Deployment → Pods on nodes, status.nodeNames set', async () => {
    const icecream = (await custom.getNamespacedCustomObject({
      group: 'controller.nicoleh.io',
      version: 'v1alpha1',
      namespace: DEMO_NAMESPACE,
      plural: 'icecreams',
      name: 'example-icecream',
    })) as { status?: { availableReplicas?: number; nodeNames?: string[] } };
    const nodes = icecream.status?.nodeNames ?? [];
    return icecream.status?.availableReplicas === 1 && nodes.length === 1 ? nodes : undefined;
  });
}

/** The Secret the demo of `levelset dev --clusters N` copies from cluster 1 into cluster 2. */
export const FLEET_SECRET = 'fleet-credentials';

/**
 * The demo of `levelset dev --clusters N`: a source Secret in the first cluster annotated
 * `levelset.dev/replicate-to-clusters: <second cluster>` and `levelset.dev/replicate-to: team-a`
 * appears in the second cluster's namespace team-a (made by {@link seedDemo}'s `before` there),
 * checked; then kubectl hints for both clusters.
 * @param from the source's cluster: its id, KubeConfig and kubeconfig file
 * @param to the target cluster, likewise
 * @throws when the copy does not appear within 30 s.
 */
export async function crossClusterDemo(
  from: { id: string; kubeConfig: KubeConfig; kubeconfigPath: string },
  to: { id: string; kubeConfig: KubeConfig; kubeconfigPath: string },
  sourceNamespace: string,
  say: (line: string) => void,
): Promise<void> {
  const source = from.kubeConfig.makeApiClient(CoreV1Api);
  const target = to.kubeConfig.makeApiClient(CoreV1Api);
  say(
    `demo        creating ${sourceNamespace}/${FLEET_SECRET} in ${from.id}, annotated levelset.dev/replicate-to-clusters: ${to.id}`,
  );
  await source
    .createNamespacedSecret({
      namespace: sourceNamespace,
      body: {
        metadata: {
          name: FLEET_SECRET,
          labels: { app: 'demo' },
          annotations: {
            'levelset.dev/replicate-to-clusters': to.id,
            'levelset.dev/replicate-to': 'team-a',
          },
        },
        type: 'Opaque',
        data: { token: encode('fleet-demo') },
      },
    })
    .catch((err: { code?: number }) => {
      if (err.code !== 409) throw err;
    });
  const started = Date.now();
  await waitFor(
    () =>
      target
        .readNamespacedSecret({ namespace: 'team-a', name: FLEET_SECRET })
        .then((s) => s.data?.token === encode('fleet-demo'))
        .catch(() => false),
    { timeoutMs: 30_000, message: `${FLEET_SECRET} copied into ${to.id} team-a` },
  );
  say(
    `demo        ✓ ${FLEET_SECRET} copied from ${from.id} into ${to.id} team-a (${Date.now() - started} ms)`,
  );
  say('demo        cross-cluster: try');
  say(
    `              kubectl --kubeconfig ${from.kubeconfigPath} -n ${sourceNamespace} get secret ${FLEET_SECRET}`,
  );
  say(
    `              kubectl --kubeconfig ${to.kubeconfigPath} get secrets -A -l levelset.dev/replica-of=${FLEET_SECRET} -o custom-columns=NAMESPACE:.metadata.namespace,NAME:.metadata.name,SOURCE-CLUSTER:.metadata.annotations.levelset\\.dev/source-cluster`,
  );
  say(
    `              kubectl --kubeconfig ${to.kubeconfigPath} -n team-a delete secret ${FLEET_SECRET}    (restored)`,
  );
}
