/** The request-recording KubeConfig lives in the kit's testing module (functions/kit/testing.ts). */
export { CountingKubeConfig } from '../../functions/kit/testing.ts';
