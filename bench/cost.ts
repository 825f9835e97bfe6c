/**
 * What running a controller costs: the serverless reconcile on Cloud Run (request-based billing)
 * beside an always-on controller pod on GKE Autopilot, from measured CPU time and memory. The
 * prices live in {@link PRICES}, one table with its date and source; docs/operations.md ("What it
 * costs") shows how to recompute every figure by hand.
 */

/** List prices (USD), as published on the date below. Change them here only. */
export const PRICES = {
  asOf: '2026-11-25',
  source:
    'Google Cloud price lists: Cloud Run (request-based billing, Tier 1 regions) and GKE Autopilot (general-purpose Pods, us-central1)',
  cloudRun: {
    /** $ per vCPU-second of billable instance time. */
    vcpuSecond: 0.000024,
    /** $ per GiB-second of billable instance time. */
    gibSecond: 0.0000025,
    /** $ per million requests. */
    perMillionRequests: 0.4,
    /** Billable instance time is rounded up to this (s). */
    billingGranularitySeconds: 0.1,
  },
  autopilot: {
    /** $ per vCPU-hour of a Pod's CPU request. */
    vcpuHour: 0.0445,
    /** $ per GiB-hour of a Pod's memory request. */
    gibHour: 0.0049225,
    /** The smallest general-purpose Pod Autopilot bills (requests are raised to it). */
    minVcpu: 0.25,
    minGib: 0.5,
  },
} as const;

/** The reconcile function as Terraform deploys it (variables.tf defaults). */
export interface CloudRunSettings {
  vcpu: number;
  memoryGib: number;
  /** Requests one instance serves at once (`reconcile_concurrency`). */
  concurrency: number;
}

export const TERRAFORM_DEFAULTS: CloudRunSettings = { vcpu: 1, memoryGib: 0.5, concurrency: 8 };

/** One reconcile, measured. */
export interface ReconcileCost {
  /** CPU time of the reconciling process (user + system), s. */
  cpuSeconds: number;
  /** Wall time of the reconcile, s. */
  wallSeconds: number;
}

/**
 * Billable instance seconds of one reconcile:
 * - `isolated` (keys arrive apart, one request per busy instance): its wall time, rounded up to the
 *   billing granularity;
 * - `busy` (an instance serving `concurrency` keys at once): its share of the instance, the larger
 *   of its CPU time over the instance's vCPUs and its wall time over the concurrency.
 */
export function billedSeconds(r: ReconcileCost, s: CloudRunSettings): { isolated: number; busy: number } {
  const g = PRICES.cloudRun.billingGranularitySeconds;
  return {
    isolated: Math.ceil(r.wallSeconds / g - 1e-9) * g,
    busy: Math.max(r.cpuSeconds / s.vcpu, r.wallSeconds / s.concurrency),
  };
}

/** $ per million reconciles billed `seconds` each on `s`: instance time at the vCPU and memory prices, plus requests. */
export function cloudRunPerMillion(seconds: number, s: CloudRunSettings): number {
  const p = PRICES.cloudRun;
  return 1e6 * seconds * (s.vcpu * p.vcpuSecond + s.memoryGib * p.gibSecond) + p.perMillionRequests;
}

/** $ per hour of an always-on Autopilot Pod requesting `vcpu` and `memoryGib` (raised to Autopilot's minimum). */
export function autopilotPodPerHour(vcpu: number, memoryGib: number): number {
  const p = PRICES.autopilot;
  return Math.max(vcpu, p.minVcpu) * p.vcpuHour + Math.max(memoryGib, p.minGib) * p.gibHour;
}

/** Reconciles per hour at which the serverless cost equals the pod's: below it, serverless is cheaper. */
export function breakEvenPerHour(perMillion: number, podPerHour: number): number {
  return podPerHour / (perMillion / 1e6);
}

/** A controller's row of the cost table (results.json `cost`, the report's per-controller table). */
export interface CostRow {
  controller: string;
  /** Per reconcile, ms: converged / changing. */
  cpuMs: { converged: number; changing: number };
  wallMs: { converged: number; changing: number };
  /** Billed instance time per converged reconcile, ms. */
  billedMs: { busy: number; isolated: number };
  /** $ per million reconciles. */
  perMillion: {
    convergedBusy: number;
    convergedIsolated: number;
    changingBusy: number;
    changingIsolated: number;
  };
  /** Reconciles per hour at which Cloud Run costs what the always-on pod costs (converged). */
  breakEvenPerHour: { isolated: number; busy: number };
  /** The function process's RSS, MiB: after the reconciles and its peak. */
  rssMib: number;
  peakRssMib: number;
}
