/**
 * Section `webhooks`: the project's webhooks (examples/foo's `foo-defaults` and `foo-scale`) as the
 * `admission` function serves them behind HTTPS with the local CA (local/admission.ts, what
 * `levelset dev` runs), registered with the section's local API server: one cold start (spawn →
 * first review answered), a warm webhook call's p50 and p99 against the webhooks' timeout, and
 * what the two webhooks add to a Foo's create (p50, p99) beside the same creates without them.
 */
import { request } from 'node:https';
import { servingCert } from '@levelset/apiserver';
import { registryPath } from '../../core/project.ts';
import { webhooks } from '../../examples/registry.ts';
import { startLocalAdmission } from '../../local/admission.ts';
import type { Section } from '../environment.ts';
import { figuresOf, quantiles } from '../report.ts';

/** The kit's default `timeoutSeconds`, in ms: what the API server waits for a webhook. */
const TIMEOUT_MS = 5000;

/** POSTs one AdmissionReview of a Foo to `url`, trusting the local CA; resolves when answered 200. */
function review(url: string, ca: string, replicas: number): Promise<void> {
  const body = JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: crypto.randomUUID(),
      kind: { group: 'samplecontroller.k8s.io', version: 'v1alpha1', kind: 'Foo' },
      resource: { group: 'samplecontroller.k8s.io', version: 'v1alpha1', resource: 'foos' },
      namespace: 'bench-admission',
      name: 'reviewed',
      operation: 'CREATE',
      userInfo: { username: 'bench', groups: ['system:authenticated'] },
      object: {
        apiVersion: 'samplecontroller.k8s.io/v1alpha1',
        kind: 'Foo',
        metadata: { name: 'reviewed', namespace: 'bench-admission' },
        spec: { deploymentName: 'reviewed', replicas },
      },
    },
  });
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', ca, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () =>
          res.statusCode === 200 ? resolve() : reject(new Error(`admission answered ${res.statusCode}`)),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

export const webhooksSection: Section = {
  name: 'webhooks',
  async run({ sizes, log, apiServer }) {
    const api = await apiServer();
    const figure = figuresOf('webhooks');
    await api.createNs('bench-admission');
    const creates = async (prefix: string) => {
      const each: number[] = [];
      for (let i = 0; i < sizes.admissionCreates; i++) {
        const t0 = performance.now();
        await api.createFoo('bench-admission', `${prefix}-${i}`);
        each.push(performance.now() - t0);
      }
      return quantiles(each);
    };
    await creates('warmup');
    const without = await creates('plain');
    const started = performance.now();
    const running = await startLocalAdmission({ registry: registryPath(), webhooks, clusters: [api.kc] });
    try {
      const ca = servingCert().cert;
      await review(`${running.url}/foo-scale`, ca, 1);
      const coldMs = performance.now() - started;
      log(`admission: first review answered ${Math.round(coldMs)} ms after its start`);
      const calls: number[] = [];
      for (let i = 0; i < sizes.admissionCalls; i++) {
        const t0 = performance.now();
        await review(`${running.url}/foo-scale`, ca, i % 5);
        calls.push(performance.now() - t0);
      }
      const warm = quantiles(calls);
      const withHooks = await creates('hooked');
      const timeout = { name: 'the webhooks’ timeoutSeconds (kit default)', value: TIMEOUT_MS };
      return {
        figures: [
          figure('cold start: spawn → first review answered (one sample)', coldMs, 'ms', timeout, {
            text: `< ${TIMEOUT_MS} ms (else Cloud Run needs min instances, which Terraform sets)`,
            met: coldMs < TIMEOUT_MS,
          }),
          figure('warm webhook call over HTTPS, p50', warm.p50, 'ms', timeout),
          figure('warm webhook call over HTTPS, p99', warm.p99, 'ms', timeout, {
            text: `< ${TIMEOUT_MS} ms`,
            met: warm.p99 < TIMEOUT_MS,
          }),
          figure('Foo create with foo-defaults and foo-scale, p50', withHooks.p50, 'ms', {
            name: 'the same creates without webhooks',
            value: without.p50,
          }),
          figure('Foo create with foo-defaults and foo-scale, p99', withHooks.p99, 'ms', {
            name: 'the same creates without webhooks',
            value: without.p99,
          }),
        ],
        notes: [
          `${sizes.admissionCalls} sequential reviews to /foo-scale; ${sizes.admissionCreates} sequential Foo creates each way (the mutating then the validating webhook on each, called by the local API server).`,
        ],
      };
    } finally {
      await running.stop();
    }
  },
};
