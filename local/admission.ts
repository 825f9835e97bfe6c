/**
 * The project's admission webhooks under `levelset dev` (and the tests): the `admission` function
 * under functions-framework, HTTPS in front of it with the local CA (local/admission-tls.ts), and
 * the webhooks' configurations (functions/kit/webhook-configurations.ts, as `levelset build` writes
 * them) registered with each embedded API server, their `clientConfig.url` the front's and their
 * `caBundle` its certificate. The embedded API server then calls them as kube-apiserver calls
 * Cloud Run's (apiserver/webhooks.ts). A cluster of `KUBECONFIG` whose API server runs on this
 * machine (its server a loopback address, {@link isLoopbackServer}) gets them too, replaced if a
 * previous stack left them and removed on stop (the cluster outlives the stack, and a webhook whose
 * front is gone would refuse every matching write under `failurePolicy: Fail`); any other cluster
 * is left alone: its API server cannot be assumed to reach this machine's 127.0.0.1.
 */
import {
  AdmissionregistrationV1Api,
  type KubeConfig,
  type V1MutatingWebhookConfiguration,
  type V1ValidatingWebhookConfiguration,
} from '@kubernetes/client-node';
import type { AdmissionWebhook } from '../core/contract/admission.ts';
import { REGISTRY_ENV } from '../core/project.ts';
import { webhookConfigurations } from '../functions/kit/webhook-configurations.ts';
import { startAdmissionTlsFront } from './admission-tls.ts';
import { freePort } from './pubsub-emulator.ts';
import { type LogLine, type Service, startService } from './service.ts';
import { functionsCli, functionsMain } from './stack-services.ts';

/** Levelset's namespace in a local cluster, left out by every webhook's namespace selector. */
export const LOCAL_LEVELSET_NAMESPACE = 'levelset-system';

export interface LocalAdmissionOptions {
  /** The registry module (absolute path): the `admission` function serves its `webhooks`. */
  registry: string;
  /** The registry's webhooks: the configurations registered. */
  webhooks: readonly AdmissionWebhook[];
  /** The clusters to register them with (the embedded API servers, or a loopback cluster of `KUBECONFIG`). */
  clusters: readonly KubeConfig[];
  /**
   * Replace a configuration of the same name, and delete the configurations on stop: for a cluster
   * that outlives the stack (`KUBECONFIG`'s). Default false (an embedded server goes with the stack).
   */
  removeOnStop?: boolean;
  /** The function's environment on top of this process's (e.g. `LOG_LEVEL`). */
  env?: Record<string, string>;
  onLog?: (line: LogLine) => void;
}

/** The running admission path. */
export interface LocalAdmission {
  /** The HTTPS base URL the configurations name (each webhook at `<url>/<name>`). */
  url: string;
  /** The functions-framework process. */
  service: Service;
  /** The configurations registered in each cluster, as `<plural>/<name>` (`validatingwebhookconfigurations/levelset-foo-scale`). */
  configurations: string[];
  /** Stops the front and the function, after deleting the configurations with `removeOnStop`. */
  stop(): Promise<void>;
}

/**
 * Starts the `admission` function and its HTTPS front, and registers the webhooks' configurations
 * with each of `clusters`. On failure, what was started is stopped.
 * @throws what the function's start, the front or the API server (e.g. 409: one already registered) throws
 */
export async function startLocalAdmission(options: LocalAdmissionOptions): Promise<LocalAdmission> {
  const port = await freePort();
  const service = await startService({
    name: 'admission',
    args: [functionsCli, '--target=admission', `--port=${port}`, `--source=${functionsMain}`],
    port,
    env: { ...options.env, [REGISTRY_ENV]: options.registry },
    ...(options.onLog ? { onLog: options.onLog } : {}),
  });
  let front: Awaited<ReturnType<typeof startAdmissionTlsFront>> | undefined;
  try {
    front = await startAdmissionTlsFront(service.url);
    const configurations = webhookConfigurations(options.webhooks, {
      baseUrl: front.url,
      caBundle: front.caBundle,
      levelsetNamespace: LOCAL_LEVELSET_NAMESPACE,
    });
    const remove = async () => {
      for (const kc of options.clusters) {
        const api = kc.makeApiClient(AdmissionregistrationV1Api);
        for (const body of configurations) {
          const name = (body.metadata as { name: string }).name;
          await (body.kind === 'MutatingWebhookConfiguration'
            ? api.deleteMutatingWebhookConfiguration({ name })
            : api.deleteValidatingWebhookConfiguration({ name })
          ).catch((err: unknown) => {
            if ((err as { code?: number }).code !== 404) throw err;
          });
        }
      }
    };
    if (options.removeOnStop) await remove(); // a previous stack's, killed before it removed them
    for (const kc of options.clusters) {
      const api = kc.makeApiClient(AdmissionregistrationV1Api);
      for (const body of configurations) {
        if (body.kind === 'MutatingWebhookConfiguration')
          await api.createMutatingWebhookConfiguration({ body: body as V1MutatingWebhookConfiguration });
        else
          await api.createValidatingWebhookConfiguration({ body: body as V1ValidatingWebhookConfiguration });
      }
    }
    const started = front;
    return {
      url: started.url,
      service,
      configurations: configurations.map(
        (c) => `${String(c.kind).toLowerCase()}s/${(c.metadata as { name: string }).name}`,
      ),
      stop: async () => {
        if (options.removeOnStop) await remove().catch(() => undefined); // best effort: the cluster may be gone
        await started.stop();
        await service.stop();
      },
    };
  } catch (err) {
    await front?.stop();
    await service.stop();
    throw err;
  }
}

/**
 * Whether the API server `server` (a kubeconfig's `cluster.server` URL) runs on this machine: a
 * loopback host (`localhost`, 127.0.0.0/8, `::1`), which can call back this machine's 127.0.0.1.
 */
export function isLoopbackServer(server: string): boolean {
  let host: string;
  try {
    host = new URL(server).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return false;
  }
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}
