/**
 * Bounded concurrency for a reconcile's independent requests (controller-runtime leaves this to each
 * reconciler; client-go's `workqueue.ParallelizeUntil` is the same idea), over p-limit.
 */
import pLimit from 'p-limit';

/**
 * Runs `fn` over `items` with at most `limit` (≥ 1) in flight, started in order.
 * @returns what `fn` returned for each item, in the order of `items`, when every call has settled
 * @throws the first rejection of `fn` (after all have settled); a `fn` that records its own failures never rejects
 */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const run = pLimit(limit);
  const settled = await Promise.allSettled(items.map((item) => run(() => fn(item))));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((s) => (s as PromiseFulfilledResult<R>).value);
}

/** {@link mapLimit} for calls that return nothing. */
export async function forEachLimit<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<unknown>) {
  await mapLimit(items, limit, fn);
}
