/**
 * The request budget of one cluster: the one setting (`LEVELSET_REQUEST_BUDGET`, requests per second
 * to one cluster's API server from every Levelset function instance together; Terraform's
 * `kubernetes_request_budget`) that the functions' client-side limits and the resync's pacing derive
 * from, so a resync of 100 000 keys or a scale-out to `reconcile_max_instances` instances never sends
 * the API server more than it was given. Unset (the local stack, `levelset run --in-process`): no
 * client-side limit, as controller-runtime's client since v0.21.
 *
 * The budget is a bound over every 1-second window, not an average (docs/architecture.md, decision
 * 64): a token bucket of rate `r` and burst `b` lets `b + r` requests through in a second that starts
 * with a full bucket (client-go's `QPS` and `Burst`; with `b = 2r`, three times the rate), so the
 * limits here are sliding windows, `p-throttle`'s strict mode: the `limit + 1`-th request waits until
 * the first of the previous `limit` is `intervalMs` old.
 *
 * - Each instance sends each cluster at most `floor(budget / LEVELSET_MAX_INSTANCES)` requests in
 *   any 1-second window (Terraform passes every instance that may send at once: `reconcile_max_instances`,
 *   as many again for the audit-log function when it is on, and the cluster's one resync run; below one per second, one per
 *   `LEVELSET_MAX_INSTANCES / budget` seconds). core/pooled-kubeconfig.ts waits for the limit before
 *   each request, watches and LIST pages included. The instances' windows add up: together at most
 *   `budget` in any second.
 * - The resync publishes at most `budget / (2 × REQUESTS_PER_RECONCILE)` keys in any 1-second window
 *   (the same rounding): the reconciles of its keys spend at most half the budget, the other half is
 *   left to live changes. With a deadline (`LEVELSET_RESYNC_TIMEOUT_SECONDS`, Terraform's
 *   `resync_timeout_seconds`), a run publishes at most {@link resyncKeysPerRun} keys and reports the
 *   rest as deferred.
 */
import pThrottle from 'p-throttle';
import * as z from 'zod';

/** Requests a converged reconcile sends (a GET of its primary, a LIST of its children, one more): the resync's pacing unit. */
export const REQUESTS_PER_RECONCILE = 3;

/**
 * Seconds of a resync run kept after its last publish, for the publishes in flight, the report and
 * the traces' flush, before Cloud Run's timeout ends the request.
 */
export const RESYNC_DEADLINE_MARGIN_SECONDS = 30;

/**
 * A client-side limit as a sliding window: at most `limit` requests (a whole number, at least 1) in any
 * window of `intervalMs` milliseconds (1000, or longer for a rate below one per second).
 */
export interface ClientLimits {
  limit: number;
  intervalMs: number;
}

/** What one cluster's budget gives each function instance and the resync. */
export interface RequestBudget {
  /** Requests per second to one cluster from every instance together. */
  budget: number;
  /** Each instance's limit per cluster. */
  perInstance: ClientLimits;
  /** Keys the resync publishes per second, per cluster (the mean; {@link resyncPacing} is its window). */
  resyncKeysPerSecond: number;
  /** The resync's publishes as a sliding window. */
  resyncPacing: ClientLimits;
  /** The resync run's timeout, seconds (`LEVELSET_RESYNC_TIMEOUT_SECONDS`), when set. */
  resyncTimeoutSeconds?: number;
}

/**
 * The sliding window of at most `perSecond` per second: `floor(perSecond)` per 1 000 ms, rounded
 * down so that no 1-second window holds more; below one per second, one per `1000 / perSecond` ms.
 * @param perSecond requests per second, positive
 */
export function limitsOf(perSecond: number): ClientLimits {
  return perSecond >= 1
    ? { limit: Math.floor(perSecond), intervalMs: 1000 }
    : { limit: 1, intervalMs: Math.ceil(1000 / perSecond) };
}

/**
 * The keys one resync run may publish before its deadline: `floor(limit / intervalMs × (timeout −
 * RESYNC_DEADLINE_MARGIN_SECONDS))` of {@link RequestBudget.resyncPacing}. With the defaults
 * (budget 100, 720 s): 16 per second × 690 s = 11 040 keys.
 * @param timeoutSeconds the run's timeout, seconds (Terraform's `resync_timeout_seconds`)
 */
export function resyncKeysPerRun(pacing: ClientLimits, timeoutSeconds: number): number {
  const seconds = Math.max(0, timeoutSeconds - RESYNC_DEADLINE_MARGIN_SECONDS);
  return Math.floor((pacing.limit * seconds * 1000) / pacing.intervalMs);
}

const budgetEnv = z.object({
  LEVELSET_REQUEST_BUDGET: z.coerce.number().positive().finite().optional(),
  LEVELSET_MAX_INSTANCES: z.coerce.number().int().min(1).max(2001).default(1),
  LEVELSET_RESYNC_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).optional(),
});

/**
 * The budget from the environment (`LEVELSET_REQUEST_BUDGET`, `LEVELSET_MAX_INSTANCES`,
 * `LEVELSET_RESYNC_TIMEOUT_SECONDS`), or
 * `undefined` when no budget is set.
 * @throws {Error} `invalid request budget: …` naming the invalid variable
 */
export function readRequestBudget(env: NodeJS.ProcessEnv = process.env): RequestBudget | undefined {
  const parsed = budgetEnv.safeParse(env);
  if (!parsed.success)
    throw new Error(
      `invalid request budget: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
  const {
    LEVELSET_REQUEST_BUDGET: budget,
    LEVELSET_MAX_INSTANCES: instances,
    LEVELSET_RESYNC_TIMEOUT_SECONDS: resyncTimeoutSeconds,
  } = parsed.data;
  if (budget === undefined) return undefined;
  const resyncKeysPerSecond = budget / (2 * REQUESTS_PER_RECONCILE);
  return {
    budget,
    perInstance: limitsOf(budget / instances),
    resyncKeysPerSecond,
    resyncPacing: limitsOf(resyncKeysPerSecond),
    ...(resyncTimeoutSeconds !== undefined ? { resyncTimeoutSeconds } : {}),
  };
}

/** Resolves when one more request may go without exceeding its {@link ClientLimits}. */
export type Limiter = () => Promise<void>;

/**
 * A sliding-window limiter of `limits` (`p-throttle`, strict): at most `limit` calls resolve in any
 * `intervalMs` window, in the order they were made; the first `limit` at once. Reads `Date.now()`
 * and waits with `setTimeout`, so a test's fake clock drives it.
 */
export function requestLimiter(limits: ClientLimits): Limiter {
  // `weight` makes strict mode check the window again when a wait ends, against the times the
  // previous calls actually went (a timer that fires late under load would otherwise shift them).
  const throttled = pThrottle({
    limit: limits.limit,
    interval: limits.intervalMs,
    strict: true,
    weight: () => 1,
  })(() => undefined);
  return async () => {
    await throttled();
  };
}
