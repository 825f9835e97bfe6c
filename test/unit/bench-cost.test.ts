/**
 * The cost model of `npm run bench` (bench/cost.ts): the worked example (200 ms on 1 vCPU
 * and 512 MiB ≈ $5.45 per million reconciles), Cloud Run's billing granularity, the busy instance's
 * share, Autopilot's minimum Pod, and the break-even rate.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  autopilotPodPerHour,
  billedSeconds,
  breakEvenPerHour,
  cloudRunPerMillion,
  PRICES,
  TERRAFORM_DEFAULTS,
} from '../../bench/cost.ts';

const near = (actual: number, expected: number, tolerance = 1e-9) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${actual} ≉ ${expected}`);

test('200 ms billed on 1 vCPU and 512 MiB costs $5.45 per million reconciles', () => {
  // 0.2 s × (1 × 0.000024 + 0.5 × 0.0000025) × 1e6 + 0.40 = 4.80 + 0.25 + 0.40
  near(cloudRunPerMillion(0.2, { vcpu: 1, memoryGib: 0.5, concurrency: 1 }), 5.45);
});

test('billed seconds: an isolated reconcile is rounded up to 100 ms; a busy instance shares its time', () => {
  const b = billedSeconds({ cpuSeconds: 0.012, wallSeconds: 0.031 }, TERRAFORM_DEFAULTS);
  near(b.isolated, 0.1);
  near(b.busy, 0.012); // CPU-bound: 12 ms of 1 vCPU > 31 ms / 8
  near(billedSeconds({ cpuSeconds: 0.001, wallSeconds: 0.16 }, TERRAFORM_DEFAULTS).busy, 0.02);
  near(billedSeconds({ cpuSeconds: 0.001, wallSeconds: 0.2 }, TERRAFORM_DEFAULTS).isolated, 0.2);
});

test('an Autopilot Pod is billed at least its minimum; break-even is the pod cost over the cost per reconcile', () => {
  const pod = autopilotPodPerHour(0.01, 0.1);
  near(
    pod,
    PRICES.autopilot.minVcpu * PRICES.autopilot.vcpuHour + PRICES.autopilot.minGib * PRICES.autopilot.gibHour,
  );
  near(breakEvenPerHour(5.45, pod), pod / 5.45e-6, 1e-6);
});
