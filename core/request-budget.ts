/**
 * The request budget of one cluster: the one setting (`LEVELSET_REQUEST_BUDGET`, requests per second
 * to one cluster's API server from every Levelset function instance together; Terraform's
 * `kubernetes_request_budget`) that the functions' client-side limits and the resync's pacing derive
 * from, so a resync of 100 000 keys or a scale-out to `reconcile_max_instances` instances never sends
 * the API server more than it was given. Unset (the local stack, `levelset run --in-process`): no
 * client-side limit, as controller-runtime's client since v0.21.
 *
 * - Each instance limits its requests to each cluster to `budget / LEVELSET_MAX_INSTANCES`
 *   per second (Terraform passes `reconcile_max_instances`), a token bucket of twice that size, as
 *   client-go's `rest.Config` `QPS` and `Burst` (core/pooled-kubeconfig.ts takes a token before
 *   each request, watches and LIST pages included).
 * - The resync publishes at most `budget / (2 × REQUESTS_PER_RECONCILE)` keys per second: the
 *   reconciles of its keys spend at most half the budget, the other half is left to live changes.
 */
import { TokenBucket } from 'limiter';
import * as z from 'zod';

/** Requests a converged reconcile sends (a GET of its primary, a LIST of its children, one more): the resync's pacing unit. */
export const REQUESTS_PER_RECONCILE = 3;

/** A client-side limit: requests per second and the burst taken at once (client-go's `QPS`, `Burst`). */
export interface ClientLimits {
  qps: number;
  burst: number;
}

/** What one cluster's budget gives each function instance and the resync. */
export interface RequestBudget {
  /** Requests per second to one cluster from every instance together. */
  budget: number;
  /** Each instance's limit per cluster. */
  perInstance: ClientLimits;
  /** Keys the resync publishes per second, per cluster. */
  resyncKeysPerSecond: number;
}

const budgetEnv = z.object({
  LEVELSET_REQUEST_BUDGET: z.coerce.number().positive().finite().optional(),
  LEVELSET_MAX_INSTANCES: z.coerce.number().int().min(1).max(1000).default(1),
});

/**
 * The budget from the environment (`LEVELSET_REQUEST_BUDGET`, `LEVELSET_MAX_INSTANCES`), or
 * `undefined` when no budget is set.
 * @throws {Error} `invalid request budget: …` naming the invalid variable
 */
export function readRequestBudget(env: NodeJS.ProcessEnv = process.env): RequestBudget | undefined {
  const parsed = budgetEnv.safeParse(env);
  if (!parsed.success)
    throw new Error(
      `invalid request budget: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const { LEVELSET_REQUEST_BUDGET: budget, LEVELSET_MAX_INSTANCES: instances } = parsed.data;
  if (budget === undefined) return undefined;
  const qps = budget / instances;
  return {
    budget,
    perInstance: { qps, burst: Math.max(1, Math.round(2 * qps)) },
    resyncKeysPerSecond: budget / (2 * REQUESTS_PER_RECONCILE),
  };
}

/**
 * A token bucket (the `limiter` package) of `limits`, full at the start as client-go's: `removeTokens(1)`
 * resolves when a request may go.
 */
export function tokenBucket(limits: ClientLimits): TokenBucket {
  const bucket = new TokenBucket({ bucketSize: limits.burst, tokensPerInterval: limits.qps, interval: 1000 });
  bucket.content = limits.burst;
  return bucket;
}
