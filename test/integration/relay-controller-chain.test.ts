/**
 * The relay follows controller references through its own caches (MapContext.get): a Pod event
 * reaches the Icecream that controls its ReplicaSet's Deployment, with real informers against an API
 * server (the local one, or TEST_KUBECONFIG's cluster) and nothing but metadata. A Pod whose
 * ReplicaSet the relay does not cache maps to nothing.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type V1OwnerReference } from '@kubernetes/client-node';
import { createLogger } from '../../core/log.ts';
import type { KeyMessage } from '../../core/message.ts';
import { icecreamResource as resource } from '../../examples/icecream/controllers/icecream/api.ts';
import { icecreamController } from '../../examples/icecream/controllers/icecream/index.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { type Relay, startRelay } from '../../relay/relay.ts';
import { waitFor } from '../support/wait.ts';

const exec = promisify(execFile);
const CRD = new URL('../../examples/icecream/controllers/icecream/crd.yaml', import.meta.url).pathname;
const podSpec = { containers: [{ name: 'nginx', image: 'nginx:latest' }] };
const template = (labels: Record<string, string>) => ({
  selector: { matchLabels: labels },
  template: { metadata: { labels }, spec: podSpec },
});
const controllerRef = (apiVersion: string, kind: string, o: { metadata?: { name?: string; uid?: string } }) =>
  ({
    apiVersion,
    kind,
    name: o.metadata?.name ?? '',
    uid: o.metadata?.uid ?? '',
    controller: true,
  }) satisfies V1OwnerReference;

describe('relay: Pod → ReplicaSet → Deployment → Icecream', () => {
  let cluster: TestCluster;
  let relay: Relay | undefined;
  let ns: string;
  const messages: KeyMessage[] = [];
  const keysFor = (name: string) => messages.filter((m) => m.namespace === ns && m.name === name).length;

  before(async () => {
    cluster = await startTestCluster();
    await exec('kubectl', ['--kubeconfig', cluster.kubeconfigPath, 'apply', '-f', CRD]);
    ns = await cluster.createNamespace('chain');
  });
  after(async () => {
    await relay?.stop();
    await cluster?.stop();
  });

  it('maps a Pod event to the Icecream at the end of its controller chain, from metadata caches', async () => {
    const custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    const apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    /** An Icecream, its Deployment and a ReplicaSet (labelled `icecream=<name>` when `labelled`). */
    const chain = async (name: string, labelled: boolean) => {
      const icecream = (await waitFor(
        () =>
          custom
            .createNamespacedCustomObject({
              ...resource,
              namespace: ns,
              body: {
                apiVersion: 'controller.nicoleh.io/v1alpha1',
                kind: 'Icecream',
                metadata: { name },
                spec: { deploymentName: name },
              },
            })
            .catch(() => undefined),
        { message: 'the Icecream CRD to be served' },
      )) as { metadata: { name: string; uid: string } };
      const labels = { app: 'nginx', icecream: name };
      const deployment = await apps.createNamespacedDeployment({
        namespace: ns,
        body: {
          metadata: {
            name,
            labels,
            ownerReferences: [controllerRef('controller.nicoleh.io/v1alpha1', 'Icecream', icecream)],
          },
          spec: template(labels),
        },
      });
      const rs = await apps.createNamespacedReplicaSet({
        namespace: ns,
        body: {
          metadata: {
            name: `${name}-rs`,
            ...(labelled ? { labels } : {}),
            ownerReferences: [controllerRef('apps/v1', 'Deployment', deployment)],
          },
          spec: template(labels),
        },
      });
      return { labels, rs };
    };
    const pod = (
      name: string,
      labels: Record<string, string>,
      rs: { metadata?: { name?: string; uid?: string } },
    ) =>
      core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name, labels, ownerReferences: [controllerRef('apps/v1', 'ReplicaSet', rs)] },
          spec: podSpec,
        },
      });

    const mapped = await chain('mapped', true);
    const unmapped = await chain('unmapped', false); // its ReplicaSet is not in the relay's cache
    relay = await startRelay({
      kubeConfig: cluster.kubeConfig,
      publisher: {
        publish: async (m) => {
          messages.push(m);
          return String(messages.length);
        },
        flush: async () => {},
      },
      controllers: [icecreamController],
      collapseMs: 50,
      logger: createLogger('relay', { write: () => {} }),
      port: 0,
      host: '127.0.0.1',
    });
    await relay.whenReady();
    await waitFor(() => keysFor('mapped') > 0 && keysFor('unmapped') > 0, { message: 'the initial keys' });
    // Trailing messages of the initial events may still be in the collapse window: wait until none is.
    const idle = async () => ((await relay?.metrics.keysPending.get())?.values[0]?.value ?? 0) === 0;
    await waitFor(idle, { message: 'the collapse window to be empty' });
    const before = { mapped: keysFor('mapped'), unmapped: keysFor('unmapped') };

    await pod('unmapped-pod', unmapped.labels, unmapped.rs);
    await pod('mapped-pod', mapped.labels, mapped.rs);
    await waitFor(() => keysFor('mapped') > before.mapped, {
      message: 'the Pod event mapped to its Icecream',
    });
    await waitFor(idle, { message: 'the collapse window to be empty' });
    assert.equal(
      keysFor('unmapped'),
      before.unmapped,
      'a Pod whose ReplicaSet is not cached maps to nothing',
    );
  });
});
