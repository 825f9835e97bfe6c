/** The informer-RSS child of the baseline (bench/informer-child.ts): client-node's `makeInformer`. */
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
