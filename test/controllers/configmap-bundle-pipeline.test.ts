/**
 * The ConfigMapBundle example end to end, in both modes (relay → Pub/Sub → functions, and
 * in-process): a bundle owns a ConfigMap merging the ConfigMaps it lists (which it does not own,
 * here in another namespace). ConfigMap events reach the bundle only through the relay's spec index
 * (`mapByIndex('sources')`): a listed ConfigMap that changes, appears after its bundle, or disappears
 * re-merges the bundle; when the list changes, the new source's keys come in and the old source's
 * keys leave the merged ConfigMap.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import {
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1ConfigMap,
} from '@kubernetes/client-node';
import { configmapBundleResource as resource } from '../../examples/configmap-bundle/controllers/configmap-bundle/api.ts';
import { findCondition, isControlledBy, parseConditions } from '../../functions/kit/index.ts';
import type { StackMode } from '../../local/stack.ts';
import { PIPELINE_MODES, type Pipeline, startPipeline } from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const CRD = new URL('../../examples/configmap-bundle/controllers/configmap-bundle/crd.yaml', import.meta.url)
  .pathname;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

// biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
type Json = any;

const suite = (mode: StackMode) => () => {
  let p: Pipeline;
  let ns: string;
  let sources: string;
  let custom: CustomObjectsApi;
  let core: CoreV1Api;

  const createSource = (name: string, data: Record<string, string>) =>
    core.createNamespacedConfigMap({ namespace: sources, body: { metadata: { name }, data } });
  const setData = (name: string, data: Record<string, string | null>) =>
    core.patchNamespacedConfigMap({ namespace: sources, name, body: { data } }, mergePatch);
  const setSources = (bundle: string, names: string[]) =>
    custom.patchNamespacedCustomObject(
      {
        ...resource,
        namespace: ns,
        name: bundle,
        body: { spec: { sources: names.map((name) => ({ namespace: sources, name })) } },
      },
      mergePatch,
    );
  const getBundle = (name: string): Promise<Json> =>
    custom.getNamespacedCustomObject({ ...resource, namespace: ns, name });
  /** Waits until the bundle's ConfigMap holds exactly `data`; returns it. */
  const merged = (bundle: string, data: Record<string, string>) =>
    waitFor(
      async () => {
        const cm: V1ConfigMap | undefined = await core
          .readNamespacedConfigMap({ namespace: ns, name: bundle })
          .catch(() => undefined);
        return cm && isDeepStrictEqual(cm.data ?? {}, data) ? cm : undefined;
      },
      { message: `the ConfigMap of bundle ${bundle} to hold ${JSON.stringify(data)}` },
    );
  const ready = async (bundle: string) =>
    findCondition(parseConditions((await getBundle(bundle)).status?.conditions), 'Ready');

  before(async () => {
    p = await startPipeline(
      async (cluster) => {
        custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
        core = cluster.kubeConfig.makeApiClient(CoreV1Api);
        ns = await cluster.createNamespace('bundle-e2e');
        sources = await cluster.createNamespace('bundle-sources');
        await cluster.applyCrd(CRD, { ...resource }, ns);
        return {};
      },
      { mode },
    );
  });
  after(() => p?.stop());

  it('merges the listed ConfigMaps into a ConfigMap it owns; a source created after its bundle is merged when it appears', async () => {
    await createSource('a', { a: '1', shared: 'from-a' });
    await custom.createNamespacedCustomObject({
      ...resource,
      namespace: ns,
      body: {
        apiVersion: `${resource.group}/${resource.version}`,
        kind: 'ConfigMapBundle',
        metadata: { name: 'bundle' },
        spec: {
          sources: [
            { namespace: sources, name: 'a' },
            { namespace: sources, name: 'c' },
          ],
        },
      },
    });
    const first = await merged('bundle', { a: '1', shared: 'from-a' });
    assert.ok(isControlledBy(first, await getBundle('bundle')), 'owned by the bundle');
    await waitFor(async () => (await ready('bundle'))?.reason === 'SourcesMissing', {
      message: 'Ready=False/SourcesMissing while c does not exist',
    });
    await createSource('c', { c: '3', shared: 'from-c' });
    await merged('bundle', { a: '1', c: '3', shared: 'from-c' });
    await waitFor(async () => (await ready('bundle'))?.status === 'True', { message: 'Ready once c exists' });
    const sourceA = await core.readNamespacedConfigMap({ namespace: sources, name: 'a' });
    assert.equal(sourceA.metadata?.ownerReferences, undefined, 'a source is not owned');
  });

  it('re-merges when a listed ConfigMap changes or disappears', async () => {
    await setData('a', { a: '2' });
    await merged('bundle', { a: '2', c: '3', shared: 'from-c' });
    await setData('c', { shared: null });
    await merged('bundle', { a: '2', c: '3', shared: 'from-a' });
    await core.deleteNamespacedConfigMap({ namespace: sources, name: 'c' });
    await merged('bundle', { a: '2', shared: 'from-a' });
    await waitFor(async () => (await ready('bundle'))?.reason === 'SourcesMissing', {
      message: 'Ready=False/SourcesMissing once c is gone',
    });
  });

  it('when the list changes, the new source is merged in and the old source leaves: its keys are removed', async () => {
    await createSource('b', { b: '1' });
    await setSources('bundle', ['b']);
    await merged('bundle', { b: '1' });
    await waitFor(async () => (await ready('bundle'))?.status === 'True', { message: 'Ready with b only' });
    // The new source maps to the bundle now…
    await setData('b', { b: '2' });
    await merged('bundle', { b: '2' });
    // …and the old one no longer merges into it.
    await setData('a', { a: '3' });
    await setData('b', { b: '3' });
    await merged('bundle', { b: '3' });
  });
};

for (const mode of PIPELINE_MODES) describe(`configmap-bundle end to end (${mode})`, suite(mode));
