/**
 * A simulated node for the embedded cluster (the local API server has no kube-controller-manager and
 * no kubelet): what the Deployment controller, the ReplicaSet controller, the scheduler and kubelet
 * would do, reduced to the objects and references controllers observe.
 *
 * - Deployment controller: each Deployment gets one ReplicaSet `<name>-<pod-template-hash>` with a
 *   controller reference to it and its replicas (ReplicaSets of an older template are deleted: a
 *   recreate, not a rolling update); its status follows that ReplicaSet's.
 * - ReplicaSet controller: creates/deletes Pods `<rs>-<random>` with a controller reference to the
 *   ReplicaSet; its status counts the Running ones.
 * - Scheduler: each new Pod gets `spec.nodeName`, spread over {@link NODE_NAMES}.
 * - Kubelet: Pods go `Running` (Ready, with an IP and a running, ready status per container).
 *
 * `npm start` runs it on the embedded cluster; the Icecream end-to-end test runs it there too (on a
 * real cluster the real controllers do this). Each object is synced from a fresh read, one sync per
 * object at a time (a tiny workqueue), so informer events arriving in bursts never double-create.
 */
import { createHash, randomBytes } from 'node:crypto';
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
  type V1Pod,
  type V1ReplicaSet,
} from '@kubernetes/client-node';
import { controllerRefOf, isControlledBy, newControllerRef } from '../functions/k8s/owner.ts';
import { selectorOf } from '../functions/kit/children.ts';
import type { Logger } from '../functions/log.ts';

/** The simulated nodes' address (a kind node's, for the look of it). */
const NODE_IP = '172.18.0.2';

/** The fake nodes Pods are scheduled on. */
export const NODE_NAMES = ['node-1', 'node-2', 'node-3'] as const;

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** Runs `sync(key)` at most once at a time per key; calls during a run trigger one more run after it. */
function workqueue(
  sync: (namespace: string, name: string) => Promise<void>,
  onError: (err: unknown) => void,
) {
  const running = new Map<string, { again: boolean }>();
  return (namespace: string | undefined, name: string | undefined) => {
    if (!namespace || !name) return;
    const key = `${namespace}/${name}`;
    const state = running.get(key);
    if (state) {
      state.again = true;
      return;
    }
    const mine = { again: false };
    running.set(key, mine);
    void (async () => {
      do {
        mine.again = false;
        await sync(namespace, name).catch(onError);
      } while (mine.again);
      running.delete(key);
    })();
  };
}

/** Starts the simulation; `stop()` ends its informers. */
export async function startSimulatedNode(
  kubeConfig: KubeConfig,
  log: Logger,
): Promise<{ stop(): Promise<void> }> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const ignore = (err: unknown) => log.debug({ err: String(err) }, 'simulated node: write failed');
  const gone = (err: unknown) => {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  };

  const syncDeployment = async (namespace: string, name: string) => {
    const d = await apps.readNamespacedDeployment({ namespace, name }).catch(gone);
    if (!d || d.metadata?.deletionTimestamp) return;
    const template = d.spec?.template ?? {};
    const hash = createHash('sha256').update(JSON.stringify(template)).digest('hex').slice(0, 10);
    const rsName = `${name}-${hash}`.slice(0, 253);
    const replicas = d.spec?.replicas ?? 1;
    const owned = (
      await apps.listNamespacedReplicaSet({
        namespace,
        labelSelector: selectorOf(d.spec?.selector.matchLabels ?? {}),
      })
    ).items.filter((rs) => isControlledBy(rs, d));
    for (const old of owned.filter((rs) => rs.metadata?.name !== rsName))
      await apps.deleteNamespacedReplicaSet({ namespace, name: old.metadata?.name ?? '' }).catch(gone);
    let rs = owned.find((r) => r.metadata?.name === rsName);
    if (!rs) {
      const labels = { ...template.metadata?.labels, 'pod-template-hash': hash };
      rs = await apps.createNamespacedReplicaSet({
        namespace,
        body: {
          metadata: {
            name: rsName,
            labels,
            ownerReferences: [newControllerRef(d, { apiVersion: 'apps/v1', kind: 'Deployment' })],
          },
          spec: {
            replicas,
            selector: { matchLabels: { ...d.spec?.selector.matchLabels, 'pod-template-hash': hash } },
            template: { ...template, metadata: { ...template.metadata, labels } },
          },
        },
      });
    } else if (rs.spec?.replicas !== replicas) {
      rs = await apps.patchNamespacedReplicaSet(
        { namespace, name: rsName, body: { spec: { replicas } } },
        merge,
      );
    }
    const s = rs.status ?? { replicas: 0 };
    const status = {
      observedGeneration: d.metadata?.generation,
      replicas: s.replicas ?? 0,
      updatedReplicas: s.replicas ?? 0,
      readyReplicas: s.readyReplicas ?? 0,
      availableReplicas: s.availableReplicas ?? 0,
    };
    const have = d.status ?? {};
    if (Object.entries(status).some(([k, v]) => (have as Record<string, unknown>)[k] !== v))
      await apps.patchNamespacedDeploymentStatus({ namespace, name, body: { status } }, merge).catch(gone);
  };

  const syncReplicaSet = async (namespace: string, name: string) => {
    const rs = await apps.readNamespacedReplicaSet({ namespace, name }).catch(gone);
    if (!rs || rs.metadata?.deletionTimestamp) return;
    const labels = rs.spec?.template?.metadata?.labels ?? {};
    const pods = (
      await core.listNamespacedPod({
        namespace,
        labelSelector: selectorOf(rs.spec?.selector.matchLabels ?? {}),
      })
    ).items.filter(
      (p) =>
        isControlledBy(p, rs) &&
        !p.metadata?.deletionTimestamp &&
        p.status?.phase !== 'Failed' &&
        p.status?.phase !== 'Succeeded',
    );
    const want = rs.spec?.replicas ?? 1;
    for (const extra of pods.slice(want))
      await core.deleteNamespacedPod({ namespace, name: extra.metadata?.name ?? '' }).catch(gone);
    const perNode = (node: string) => pods.filter((p) => p.spec?.nodeName === node).length;
    for (let i = pods.length; i < want; i++) {
      const nodeName = [...NODE_NAMES].sort((a, b) => perNode(a) - perNode(b))[0];
      const pod = await core.createNamespacedPod({
        namespace,
        body: {
          metadata: {
            name: `${name}-${randomBytes(3).toString('hex').slice(0, 5)}`.slice(0, 253),
            labels,
            ownerReferences: [newControllerRef(rs, { apiVersion: 'apps/v1', kind: 'ReplicaSet' })],
          },
          spec: { ...(rs.spec?.template?.spec ?? { containers: [] }), nodeName },
        },
      });
      pods.push(pod);
    }
    const kept = pods.slice(0, want);
    const running = kept.filter((p) => p.status?.phase === 'Running').length;
    const status = {
      observedGeneration: rs.metadata?.generation,
      replicas: kept.length,
      readyReplicas: running,
      availableReplicas: running,
    };
    const have = rs.status ?? {};
    if (Object.entries(status).some(([k, v]) => (have as Record<string, unknown>)[k] !== v))
      await apps.patchNamespacedReplicaSetStatus({ namespace, name, body: { status } }, merge).catch(gone);
  };

  let nextPodIp = 0;
  const runPod = (pod: V1Pod) => {
    const { name, namespace, deletionTimestamp } = pod.metadata ?? {};
    if (!name || !namespace || deletionTimestamp || pod.status?.phase === 'Running') return;
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return;
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const ip = `10.244.0.${(nextPodIp++ % 254) + 1}`;
    const condition = (type: string) => ({
      type,
      status: 'True',
      lastProbeTime: null,
      lastTransitionTime: now,
    });
    // What kubelet reports for a started pod (kubectl get pods: READY n/n, STATUS Running, IP).
    const body = {
      status: {
        phase: 'Running',
        startTime: now,
        hostIP: NODE_IP,
        hostIPs: [{ ip: NODE_IP }],
        podIP: ip,
        podIPs: [{ ip }],
        conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(condition),
        containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
          name: c.name,
          image: c.image,
          imageID: '',
          containerID: `containerd://simulated-${name}-${c.name}`,
          ready: true,
          started: true,
          restartCount: 0,
          state: { running: { startedAt: now } },
        })),
      },
    };
    core.patchNamespacedPodStatus({ name, namespace, body }, merge).catch(ignore);
  };

  const deploymentQueue = workqueue(syncDeployment, ignore);
  const replicaSetQueue = workqueue(syncReplicaSet, ignore);
  const controllerOf = (o: { metadata?: { namespace?: string } }, kind: string) => {
    const r = controllerRefOf(o);
    return r?.kind === kind ? r.name : undefined;
  };

  const pods = makeInformer<V1Pod>(kubeConfig, '/api/v1/pods', () => core.listPodForAllNamespaces());
  const deployments = makeInformer<V1Deployment>(kubeConfig, '/apis/apps/v1/deployments', () =>
    apps.listDeploymentForAllNamespaces(),
  );
  const replicaSets = makeInformer<V1ReplicaSet>(kubeConfig, '/apis/apps/v1/replicasets', () =>
    apps.listReplicaSetForAllNamespaces(),
  );
  const onPod = (pod: V1Pod) => {
    runPod(pod);
    replicaSetQueue(pod.metadata?.namespace, controllerOf(pod, 'ReplicaSet'));
  };
  pods.on('add', onPod);
  pods.on('update', onPod);
  pods.on('delete', (pod) => replicaSetQueue(pod.metadata?.namespace, controllerOf(pod, 'ReplicaSet')));
  const onReplicaSet = (rs: V1ReplicaSet) => {
    replicaSetQueue(rs.metadata?.namespace, rs.metadata?.name);
    deploymentQueue(rs.metadata?.namespace, controllerOf(rs, 'Deployment'));
  };
  replicaSets.on('add', onReplicaSet);
  replicaSets.on('update', onReplicaSet);
  replicaSets.on('delete', (rs) => deploymentQueue(rs.metadata?.namespace, controllerOf(rs, 'Deployment')));
  const onDeployment = (d: V1Deployment) => deploymentQueue(d.metadata?.namespace, d.metadata?.name);
  deployments.on('add', onDeployment);
  deployments.on('update', onDeployment);
  let stopped = false;
  const informers = [pods, deployments, replicaSets] as const;
  for (const informer of informers) {
    informer.on('error', () => {
      if (!stopped) setTimeout(() => void informer.start().catch(ignore), 1000).unref();
    });
  }
  await Promise.all(informers.map((i) => i.start()));
  return {
    async stop() {
      stopped = true;
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
