/**
 * Starting a test's parts side by side without leaking one: `Promise.all` rejects as soon as one
 * start fails and leaves the others to finish unseen, so a part that started after all (a child
 * process, a server) was never stopped and kept the test file's process alive.
 */

/**
 * Starts `starts` side by side, as `Promise.all` does. When one fails, waits until every start has
 * settled, stops what did start, then throws the first failure.
 * @returns the started parts, in order
 * @throws the first start's error
 */
export async function startAll<const T extends readonly Promise<{ stop(): Promise<void> }>[]>(
  starts: T,
): Promise<{ -readonly [K in keyof T]: Awaited<T[K]> }> {
  const results = await Promise.allSettled(starts);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.allSettled(results.map((r) => (r.status === 'fulfilled' ? r.value.stop() : undefined)));
    throw failed.reason;
  }
  return results.map((r) => (r as PromiseFulfilledResult<unknown>).value) as {
    -readonly [K in keyof T]: Awaited<T[K]>;
  };
}
