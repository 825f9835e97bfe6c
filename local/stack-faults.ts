/**
 * Fault injection into a running local stack (local/stack.ts), for the fault tests: SIGKILL to a
 * relay or a function, the Pub/Sub emulator stopped and started again. `levelset dev` runs the stack
 * without it.
 *
 *   await stackFaults(stack).killRelay();
 */
import { type AnyLocalStack, type InProcessStack, type LocalStack, stackProcesses } from './stack.ts';

/** The faults of either mode's stack. */
export interface RelayFaults {
  /**
   * Kills the relay of `cluster` (default: the first) with SIGKILL: keys in its collapse window are
   * lost with it. In-process mode: the in-process process, and its queued keys.
   */
  killRelay(cluster?: string): Promise<void>;
}

/** The faults of a serverless stack: its functions and its emulator too. */
export interface ServerlessFaults extends RelayFaults {
  /**
   * Kills a function's process with SIGKILL (mid-request, if one runs) and starts a new one on the
   * same port (the push endpoint stays valid). `signal: 'SIGTERM'` stops it gracefully instead
   * (SIGKILL after its grace). `killOnly` leaves it down until `restartFunction` is called again.
   */
  restartFunction(
    name: 'reconcile' | 'resync',
    options?: { killOnly?: boolean; signal?: 'SIGKILL' | 'SIGTERM' },
  ): Promise<void>;
  /** Kills the Pub/Sub emulator (its topics, subscriptions and messages are lost). */
  stopEmulator(): Promise<void>;
  /**
   * Starts the emulator again at the same address with its topology, as Pub/Sub itself never
   * loses it: nothing reaches it before its topics have their subscriptions (local/stack.ts).
   */
  startEmulator(): Promise<void>;
}

/**
 * The faults `stack` can be given.
 * @throws {Error} for a stack local/stack.ts `startLocalStack` did not start
 */
export function stackFaults(stack: LocalStack): ServerlessFaults;
export function stackFaults(stack: InProcessStack | AnyLocalStack): RelayFaults;
export function stackFaults(stack: AnyLocalStack): RelayFaults | ServerlessFaults {
  const processes = stackProcesses(stack);
  const killRelay = async (cluster?: string) => processes.relay(cluster).release()?.kill();
  if (processes.mode === 'in-process') return { killRelay };
  const { functions } = processes;
  return {
    killRelay,
    async restartFunction(name, options = {}) {
      const running = functions[name].release();
      await (options.signal === 'SIGTERM' ? running?.stop() : running?.kill());
      if (!options.killOnly) await functions[name].start();
    },
    stopEmulator: () => processes.stopEmulator(),
    startEmulator: () => processes.startEmulator(),
  };
}
