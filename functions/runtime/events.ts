/**
 * Kubernetes Events about the objects a controller reconciles (client-go's `record.EventRecorder`).
 */
import { CoreV1Api, type CoreV1Event, type KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log.ts';

export type EventType = 'Normal' | 'Warning';

/** Records Events; a failed write is logged and swallowed: an Event is never worth a retry. */
export interface EventRecorder {
  /**
   * @param object the regarding object (needs apiVersion, kind, metadata.name/namespace/uid)
   * @param reason UpperCamelCase, e.g. `Synced`, `ErrResourceExists`
   * @param message human-readable; never include Secret data
   */
  record(object: KubernetesObject, type: EventType, reason: string, message: string): Promise<void>;
}

/**
 * An EventRecorder writing core/v1 Events (what `kubectl describe` shows), with
 * `source.component` and `reportingComponent` = `levelset.dev/<controller>`.
 */
export function createEventRecorder(kubeConfig: KubeConfig, controller: string, log: Logger): EventRecorder {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const component = `levelset.dev/${controller}`;
  return {
    async record(object, type, reason, message) {
      const md = object.metadata ?? {};
      const namespace = md.namespace || 'default';
      const now = new Date();
      const body: CoreV1Event = {
        metadata: { generateName: `${md.name ?? 'object'}.`, namespace },
        involvedObject: {
          apiVersion: object.apiVersion,
          kind: object.kind,
          name: md.name,
          namespace: md.namespace,
          uid: md.uid,
          resourceVersion: md.resourceVersion,
        },
        type,
        reason,
        message,
        source: { component },
        reportingComponent: component,
        reportingInstance: process.env.K_REVISION ?? process.env.HOSTNAME ?? 'local',
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        action: reason,
      };
      try {
        await core.createNamespacedEvent({ namespace, body });
        log.debug({ reason, type }, 'recorded event');
      } catch (err) {
        log.warn({ err: String(err), reason }, 'could not record event');
      }
    },
  };
}
