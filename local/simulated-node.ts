/**
 * A simulated node for the embedded cluster of `npm start`: what kubelet and kube-controller-manager's
 * Deployment controller would do, reduced to status, so that the demo's Pods run and Deployments
 * become available. Pods go `Running` (Ready, with an IP and a running, ready status per container, as
 * kubelet reports them); a Deployment's `status.replicas`/`readyReplicas`/
 * `availableReplicas` follow `spec.replicas`. Tests never use it: they set status themselves, as
 * envtest-based tests do.
 */
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  makeInformer,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import type { Logger } from '../functions/log.ts';

/** The simulated node's address (a kind node's, for the look of it). */
const NODE_IP = '172.18.0.2';

/** Starts the simulation; `stop()` ends its informers. */
export async function startSimulatedNode(
  kubeConfig: KubeConfig,
  log: Logger,
): Promise<{ stop(): Promise<void> }> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const apps = kubeConfig.makeApiClient(AppsV1Api);
  const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  const ignore = (err: unknown) => log.debug({ err: String(err) }, 'simulated node: status write failed');

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
  const rollOut = (deployment: V1Deployment) => {
    const { name, namespace } = deployment.metadata ?? {};
    const replicas = deployment.spec?.replicas ?? 1;
    const s = deployment.status ?? {};
    if (!name || !namespace) return;
    if (
      s.availableReplicas === replicas &&
      s.replicas === replicas &&
      s.observedGeneration === deployment.metadata?.generation
    )
      return;
    const body = {
      status: {
        observedGeneration: deployment.metadata?.generation,
        replicas,
        updatedReplicas: replicas,
        readyReplicas: replicas,
        availableReplicas: replicas,
      },
    };
    apps.patchNamespacedDeploymentStatus({ name, namespace, body }, merge).catch(ignore);
  };

  const pods = makeInformer<V1Pod>(kubeConfig, '/api/v1/pods', () => core.listPodForAllNamespaces());
  const deployments = makeInformer<V1Deployment>(kubeConfig, '/apis/apps/v1/deployments', () =>
    apps.listDeploymentForAllNamespaces(),
  );
  pods.on('add', runPod);
  pods.on('update', runPod);
  deployments.on('add', rollOut);
  deployments.on('update', rollOut);
  let stopped = false;
  for (const informer of [pods, deployments] as const) {
    informer.on('error', () => {
      if (!stopped) setTimeout(() => void informer.start().catch(ignore), 1000).unref();
    });
  }
  await Promise.all([pods.start(), deployments.start()]);
  return {
    async stop() {
      stopped = true;
      await Promise.all([pods.stop(), deployments.stop()]);
    },
  };
}
