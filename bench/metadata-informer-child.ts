/**
 * The benchmark's metadata-only informer child (bench/informer-child.ts says how it runs): the
 * relay's MetadataInformer on the ConfigMaps of `--namespace`.
 *
 *   node --expose-gc RELAY_NODE_OPTIONS bench-informer.mjs --kubeconfig F --namespace NS --expect N
 */
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
