/** The tests' cluster is the kit's test cluster (functions/kit/test-cluster.ts, exported by the kit's testing module). */
export {
  noReadyNodeSkip,
  secondClusterSkip,
  startSecondTestCluster,
  startTestCluster,
  type TestCluster,
  uniqueSuffix,
} from '../../functions/kit/test-cluster.ts';
