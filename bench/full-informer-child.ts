/**
 * The benchmark's full-object informer child, the baseline (bench/informer-child.ts says how it
 * runs): client-node's `makeInformer` (whole objects, the classic controller's cache) on the
 * ConfigMaps of `--namespace`.
 *
 *   node --expose-gc RELAY_NODE_OPTIONS bench-full-informer.mjs --kubeconfig F --namespace NS --expect N
 */
import { CoreV1Api, makeInformer } from '@kubernetes/client-node';
import { measureInformer } from './informer-child.ts';

await measureInformer(async (kubeConfig, namespace) => {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const informer = makeInformer(kubeConfig, `/api/v1/namespaces/${namespace}/configmaps`, () =>
    core.listNamespacedConfigMap({ namespace }),
  );
  await informer.start();
  return { size: () => informer.list().length, stop: () => informer.stop() };
});
