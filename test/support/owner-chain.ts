/**
 * Objects for the unit tests of maps through controller references (Pod → ReplicaSet → Deployment →
 * a `Widget`): a controller reference, a namespaced object in `ns` that carries one, and its
 * `ADDED` watch event. Shared by the kit's tests and the relay's tests of kit controllers.
 */
import type { KubernetesObject } from '@kubernetes/client-node';
import type { WatchEvent } from '../../core/contract/controller.ts';
import { customResource } from '../../functions/kit/index.ts';

/** The test primary type: `test.levelset.dev/v1` Widget. */
export const widgets = customResource({ group: 'test.levelset.dev', version: 'v1', kind: 'Widget' });

/** A controller reference (`controller: true`) to `kind` `name` with `uid`. */
export const ref = (apiVersion: string, kind: string, name: string, uid: string) => ({
  apiVersion,
  kind,
  name,
  uid,
  controller: true,
});

/** An object `name` in namespace `ns` with `uid`, controlled by `owner` when given. */
export const object = (name: string, uid: string, owner?: ReturnType<typeof ref>): KubernetesObject => ({
  metadata: { name, namespace: 'ns', uid, ...(owner ? { ownerReferences: [owner] } : {}) },
});

/** The `ADDED` event of `o`. */
export const event = (o: KubernetesObject): WatchEvent => ({ type: 'ADDED', object: o });
