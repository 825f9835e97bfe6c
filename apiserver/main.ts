/**
 * Runs the local Kubernetes API server from the command line:
 * `npx node apiserver/main.ts [--port 6443] [--kubeconfig ./kubeconfig] [--history 1000]
 * [--tls] [--drop-watches-every SECONDS] [--latency-ms MS] [--fail verb:resource:status:count,...]`.
 * Fault flags default from LOCAL_APISERVER_DROP_WATCHES_EVERY, LOCAL_APISERVER_LATENCY_MS, LOCAL_APISERVER_FAIL.
 */
import { parseArgs } from 'node:util';
import { applyFaultConfig, faultConfigFromEnv } from './faults.ts';
import { startLocalApiServer } from './index.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    host: { type: 'string', default: '127.0.0.1' },
    kubeconfig: { type: 'string' },
    history: { type: 'string' },
    'drop-watches-every': { type: 'string' },
    'latency-ms': { type: 'string' },
    fail: { type: 'string' },
    tls: { type: 'boolean', default: false },
  },
});

const server = await startLocalApiServer({
  host: values.host,
  port: Number(values.port),
  kubeconfigPath: values.kubeconfig,
  historySize: values.history ? Number(values.history) : undefined,
  tls: values.tls,
});
const env = faultConfigFromEnv(process.env);
applyFaultConfig(server.faults, {
  dropWatchesEverySeconds: values['drop-watches-every']
    ? Number(values['drop-watches-every'])
    : env.dropWatchesEverySeconds,
  latencyMs: values['latency-ms'] ? Number(values['latency-ms']) : env.latencyMs,
  fail: values.fail ?? env.fail,
});
process.stdout.write(`local apiserver listening on ${server.url}\nKUBECONFIG=${server.kubeconfigPath}\n`);
const shutdown = () => {
  server.stop().then(() => process.exit(0));
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
