/**
 * The local stack's services in one shape, and their composition: a service starts, resolving once
 * it is ready, and stops; a composition starts services stage by stage and stops the stages in the
 * reverse order, so that what started last, and may depend on the rest, stops first.
 */

/** What a service runs (a child process, a proxy, an API server), or a cleanup in the stop order. */
export interface Stoppable {
  stop(): Promise<void>;
}

/** One service: `start()` resolves once it is ready; `stop()` stops it, and does nothing when it does not run. */
export interface LocalService extends Stoppable {
  start(): Promise<unknown>;
}

/**
 * The service of a launch function, which starts something and resolves once it is ready: `start`
 * launches it (with `start`'s arguments) unless it runs; after `stop` it may start again.
 */
export class Launcher<T extends Stoppable, A extends unknown[] = []> implements LocalService {
  #running: T | undefined;
  readonly #launch: (...args: A) => Promise<T>;

  constructor(launch: (...args: A) => Promise<T>) {
    this.#launch = launch;
  }

  /** What runs: `undefined` before the start and after a stop. */
  get running(): T | undefined {
    return this.#running;
  }

  /** @throws what the launch function throws */
  async start(...args: A): Promise<T> {
    this.#running ??= await this.#launch(...args);
    return this.#running;
  }

  async stop(): Promise<void> {
    await this.release()?.stop();
  }

  /** Forgets what runs and returns it, for the caller to end otherwise (SIGKILL). */
  release(): T | undefined {
    const running = this.#running;
    this.#running = undefined;
    return running;
  }
}

/** Services in stages: one stage's services start, and stop, side by side; the stages stop last first. */
export class Composition {
  readonly #stages: Stoppable[][] = [];

  /** Adds a stage without starting it (started by others, or a cleanup): it stops with the rest. */
  add(...stage: Stoppable[]): void {
    this.#stages.push(stage);
  }

  /** Adds `services` as a stage and starts them. @throws the first start's error, once all have settled */
  async start(...services: LocalService[]): Promise<void> {
    this.add(...services);
    const results = await Promise.allSettled(services.map((s) => s.start()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  }

  /** Starts one service, or a launch function's ({@link Launcher}), as a stage; what it started. @throws its start's error */
  async launch<T>(service: { start(): Promise<T>; stop(): Promise<void> } | (() => Promise<T & Stoppable>)) {
    const added = typeof service === 'function' ? new Launcher(service) : service;
    this.add(added);
    return added.start();
  }

  /** Stops every stage, the last started first; a failed stop goes to `onError`, and the rest still stops. */
  async stop(onError: (err: Error) => void = () => {}): Promise<void> {
    for (const stage of this.#stages.splice(0).reverse())
      await Promise.all(stage.map((s) => s.stop().catch(onError)));
  }
}
