/** The informer-RSS child of the relay (bench/informer-child.ts): its MetadataInformer. */
import { configmaps } from '../functions/kit/resources.ts';
import { MetadataInformer } from '../relay/informer.ts';
import { measureInformer } from './informer-child.ts';

await measureInformer(async (kubeConfig, namespace, logger) => {
  const informer = new MetadataInformer({
    kubeConfig,
    resource: configmaps,
    namespace,
    logger,
    onEvent: () => {},
  });
  informer.start();
  await informer.whenSynced();
  return { size: () => informer.size, stop: () => informer.stop() };
});
