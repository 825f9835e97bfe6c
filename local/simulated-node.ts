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
 * - Kubelet registration: a Node per name of {@link NODE_NAMES} (Ready, with addresses and node
 *   info, so that `kubectl get nodes` lists them) and its Lease in `kube-node-lease`, renewed every
 *   10 s as kubelet's heartbeat.
 * - Scheduler: every Pod without a node (whoever created it: a ReplicaSet, or a controller such as
 *   Customcluster directly) is bound to the node with the fewest Pods among those its `nodeSelector`
 *   fits, through `pods/binding` as kube-scheduler binds; a Pod no node fits stays Pending.
 * - Kubelet: Pods bound to a simulated node go `Running` (Ready, with an IP and a running, ready status
 *   per container); one being deleted is removed for good at once (its containers stop at once).
 *
 * `npm start` runs it on the embedded cluster; the Icecream end-to-end test runs it there too (on a
 * real cluster the real controllers do this). Each object is synced from a fresh read, one sync per
 * object at a time (a tiny workqueue), so informer events arriving in bursts never double-create.
 */
import { createHash, randomBytes } from 'node:crypto';
import { release } from 'node:os';
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  type KubeConfig,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
  V1MicroTime,
  type V1Node,
  type V1NodeCondition,
  type V1Pod,
  type V1ReplicaSet,
  VersionApi,
} from '@kubernetes/client-node';
import { controllerRefOf, isControlledBy, newControllerRef } from '../core/k8s/owner.ts';
import type { Logger } from '../core/log.ts';
import { selectorOf } from '../functions/kit/children.ts';

/** The simulated nodes Pods are scheduled on. */
export const NODE_NAMES = ['node-1', 'node-2', 'node-3'] as const;

/** A simulated node's InternalIP (kind's node addresses, for the look of it): node-1 → 172.18.0.2. */
const nodeIp = (node: string) => `172.18.0.${NODE_NAMES.indexOf(node as (typeof NODE_NAMES)[number]) + 2}`;

/** kubelet's node lease duration (s) and renew interval (ms): `nodeLeaseDurationSeconds`, a quarter of it. */
const LEASE_DURATION_SECONDS = 40;
const LEASE_RENEW_MS = 10_000;

/**
 * The Node kubelet registers for `name` (pkg/kubelet/kubelet_node_status.go initialNode, then its
 * status: conditions, addresses, node info).
 */
function nodeObject(name: string, kubeletVersion: string): V1Node {
  const now = new Date();
  const condition = (type: string, status: string, reason: string, message: string): V1NodeCondition => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: now,
    lastTransitionTime: now,
  });
  const resources = { cpu: '2', memory: '8Gi', pods: '110', 'ephemeral-storage': '100Gi' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'levelset.dev/simulated': 'true',
      },
    },
    spec: {},
    status: {
      capacity: resources,
      allocatable: resources,
      conditions: [
        condition(
          'MemoryPressure',
          'False',
          'KubeletHasSufficientMemory',
          'kubelet has sufficient memory available',
        ),
        condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
      ],
      addresses: [
        { type: 'InternalIP', address: nodeIp(name) },
        { type: 'Hostname', address: name },
      ],
      nodeInfo: {
        kubeletVersion,
        kubeProxyVersion: '',
        osImage: 'Levelset simulated node',
        kernelVersion: release(),
        containerRuntimeVersion: 'simulated://1.0.0',
        operatingSystem: 'linux',
        architecture: 'amd64',
        machineID: name,
        systemUUID: name,
        bootID: name,
      },
    },
  };
}

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

/** What {@link startSimulatedNode} plays besides kubelet and the scheduler. */
export interface SimulatedNodeOptions {
  /**
   * Also play kube-controller-manager's Deployment and ReplicaSet controllers (default `true`): the
   * embedded cluster has none; a real API server with its own kube-controller-manager but no
   * kubelet (kwok's setting) wants only the Nodes, the scheduler and kubelet (`false`).
   */
  workloadControllers?: boolean;
}

/** Starts the simulation; `stop()` ends its informers. */
export async function startSimulatedNode(
  kubeConfig: KubeConfig,
  log: Logger,
  options: SimulatedNodeOptions = {},
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
    for (let i = pods.length; i < want; i++) {
      const pod = await core.createNamespacedPod({
        namespace,
        body: {
          metadata: {
            name: `${name}-${randomBytes(3).toString('hex').slice(0, 5)}`.slice(0, 253),
            labels,
            ownerReferences: [newControllerRef(rs, { apiVersion: 'apps/v1', kind: 'ReplicaSet' })],
          },
          spec: rs.spec?.template?.spec ?? { containers: [] },
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
    const { name, namespace, deletionTimestamp, uid } = pod.metadata ?? {};
    const node = pod.spec?.nodeName;
    if (!name || !namespace || !node || !(NODE_NAMES as readonly string[]).includes(node)) return;
    if (deletionTimestamp) {
      // kubelet, once the containers of a Pod being deleted have stopped, removes it for good (a
      // grace period of 0, on its UID): until then the Pod stays Terminating, and its namespace too.
      core
        // In the body: a DELETE with one reads its options from it alone (handlers/delete.go).
        .deleteNamespacedPod({ name, namespace, body: { gracePeriodSeconds: 0, preconditions: { uid } } })
        .catch(ignore);
      return;
    }
    if (pod.status?.phase === 'Running') return;
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
        hostIP: nodeIp(node),
        hostIPs: [{ ip: nodeIp(node) }],
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

  // Kubelet registration: the Nodes, then their Leases, renewed as kubelet's heartbeat.
  const coordination = kubeConfig.makeApiClient(CoordinationV1Api);
  const kubeletVersion = (await kubeConfig.makeApiClient(VersionApi).getCode()).gitVersion;
  const nodes = new Map<string, V1Node>();
  for (const name of NODE_NAMES) {
    const desired = nodeObject(name, kubeletVersion);
    const node = await core.createNode({ body: desired }).catch(async (err: { code?: number }) => {
      if (err.code !== 409) throw err;
      return core.patchNodeStatus({ name, body: { status: desired.status } }, merge);
    });
    nodes.set(name, node);
  }
  const renewLeases = async () => {
    for (const [name, node] of nodes) {
      const namespace = 'kube-node-lease';
      const renewTime = new V1MicroTime(); // metav1.MicroTime: microseconds, as the server parses it
      await coordination
        .patchNamespacedLease({ namespace, name, body: { spec: { renewTime } } }, merge)
        .catch(async (err: { code?: number }) => {
          if (err.code !== 404) throw err;
          await coordination.createNamespacedLease({
            namespace,
            body: {
              metadata: {
                name,
                ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name, uid: node.metadata?.uid ?? '' }],
              },
              spec: { holderIdentity: name, leaseDurationSeconds: LEASE_DURATION_SECONDS, renewTime },
            },
          });
        })
        .catch(ignore);
    }
  };
  await renewLeases();
  const leaseTimer = setInterval(() => void renewLeases(), LEASE_RENEW_MS);
  leaseTimer.unref();

  const pods = makeInformer<V1Pod>(kubeConfig, '/api/v1/pods', () => core.listPodForAllNamespaces());

  // kube-scheduler: each Pod without a node is bound to the simulated node with the fewest Pods
  // (those cached, plus bindings in flight, so that a burst of Pods spreads).
  const binding = new Map<string, string>();
  const schedule = (pod: V1Pod) => {
    const { name, namespace, deletionTimestamp } = pod.metadata ?? {};
    if (!name || !namespace || deletionTimestamp || pod.spec?.nodeName) return;
    if ((pod.spec?.schedulerName ?? 'default-scheduler') !== 'default-scheduler') return;
    const key = `${namespace}/${name}`;
    if (binding.has(key)) return;
    const cached = pods.list();
    const load = (node: string) =>
      cached.filter((p) => p.spec?.nodeName === node).length +
      [...binding.values()].filter((n) => n === node).length;
    // kube-scheduler's NodeAffinity filter, for `spec.nodeSelector`: a Pod no node fits stays Pending.
    const selector = Object.entries(pod.spec?.nodeSelector ?? {});
    const fits = (node: string) => selector.every(([k, v]) => nodes.get(node)?.metadata?.labels?.[k] === v);
    const nodeName = NODE_NAMES.filter(fits).sort((a, b) => load(a) - load(b))[0];
    if (!nodeName) return;
    binding.set(key, nodeName);
    core
      .createNamespacedPodBinding({
        name,
        namespace,
        body: { metadata: { name }, target: { apiVersion: 'v1', kind: 'Node', name: nodeName } },
      })
      .catch(ignore) // 409: bound meanwhile; 404: deleted
      .finally(() => binding.delete(key));
  };
  const deployments = makeInformer<V1Deployment>(kubeConfig, '/apis/apps/v1/deployments', () =>
    apps.listDeploymentForAllNamespaces(),
  );
  const replicaSets = makeInformer<V1ReplicaSet>(kubeConfig, '/apis/apps/v1/replicasets', () =>
    apps.listReplicaSetForAllNamespaces(),
  );
  const workloadControllers = options.workloadControllers ?? true;
  const onPod = (pod: V1Pod) => {
    schedule(pod);
    runPod(pod);
    if (workloadControllers) replicaSetQueue(pod.metadata?.namespace, controllerOf(pod, 'ReplicaSet'));
  };
  pods.on('add', onPod);
  pods.on('update', onPod);
  if (workloadControllers)
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
  const informers = workloadControllers ? [pods, deployments, replicaSets] : [pods];
  for (const informer of informers) {
    informer.on('error', () => {
      if (!stopped) setTimeout(() => void informer.start().catch(ignore), 1000).unref();
    });
  }
  await Promise.all(informers.map((i) => i.start()));
  return {
    async stop() {
      stopped = true;
      clearInterval(leaseTimer);
      await Promise.all(informers.map((i) => i.stop()));
    },
  };
}
