/**
 * `levelset reconcile <controller> <namespace/name>`: publishes one key now (`reason: "manual"`);
 * `--wait` follows it to its outcome in the local stack's reconcile log (local/state.ts).
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import type { Controller, Outcome } from '../../core/contract/controller.ts';
import { DEFAULT_CLUSTER, type Key, keyString, parseKeyString } from '../../core/contract/key.ts';
import { isDNS1123Label, isDNS1123Subdomain } from '../../core/contract/names.ts';
import { keyMessageOf } from '../../core/message.ts';
import { loadRegistry } from '../../core/project.ts';
import { CliError, EXIT_NOT_FOUND, EXIT_USAGE, firstLine } from '../errors.ts';
import { formatDuration, say } from '../output.ts';
import { resolveTarget, type Target, targetPublisher } from '../target.ts';

/**
 * The controller of `controllers` called `name`.
 * @throws {CliError} (exit 2) naming the registered ones.
 */
export function requireController(name: string, controllers: readonly Controller[]): Controller {
  const controller = controllers.find((c) => c.name === name);
  if (!controller)
    throw new CliError(
      `unknown controller "${name}": one of ${controllers.map((c) => c.name).join(', ')} (levelset controllers)`,
      EXIT_USAGE,
    );
  return controller;
}

/**
 * The project's registered controller called `name` (core/project.ts, {@link requireController}).
 * @throws {ProjectError} outside a project; {@link CliError} (exit 2) for an unknown name
 */
export async function registeredController(name: string): Promise<Controller> {
  return requireController(name, (await loadRegistry()).controllers);
}

/**
 * Parses a key as client-go's `SplitMetaNamespaceKey`: `namespace/name` for a namespaced primary,
 * `name` for a cluster-scoped one.
 * @throws {CliError} (exit 2) for any other shape.
 */
export function parseKey(controller: Controller, text: string): Key {
  let key: Key | undefined;
  try {
    key = parseKeyString(text);
  } catch {
    // more than one '/': malformed, said below
  }
  if (
    key &&
    isDNS1123Subdomain(key.name) &&
    (controller.primary.namespaced ? isDNS1123Label(key.namespace) : key.namespace === '')
  )
    return key;
  throw new CliError(
    `malformed key "${text}": ${controller.name} keys are ${controller.primary.namespaced ? 'namespace/name' : 'name (cluster-scoped)'} of a ${controller.primary.kind}`,
    EXIT_USAGE,
  );
}

/** Outcomes after which Pub/Sub delivers the message no more (functions/runtime/reconcile.ts answers 204). */
const FINAL: readonly Outcome[] = ['success', 'requeue', 'terminal', 'malformed'];

interface OutcomeLine {
  outcome: Outcome;
  durationMs?: number;
  err?: string;
  /** The reconcile found no primary (functions/runtime/reconcile.ts). */
  notFound?: boolean;
}

/**
 * Follows a JSON-lines log file from byte `offset`, yielding the outcome lines of message `messageId`
 * (the reconcile's last line per delivery) until a final outcome or the deadline.
 */
async function* outcomesOf(
  path: string,
  offset: number,
  messageId: string,
  deadline: number,
): AsyncIterable<OutcomeLine> {
  let position = offset;
  let partial = '';
  const fd = openSync(path, 'r');
  try {
    while (Date.now() < deadline) {
      const size = statSync(path).size;
      if (size > position) {
        const buffer = Buffer.alloc(size - position);
        readSync(fd, buffer, 0, buffer.length, position);
        position = size;
        const lines = (partial + buffer.toString('utf8')).split('\n');
        partial = lines.pop() ?? '';
        for (const text of lines) {
          let line: Record<string, unknown>;
          try {
            line = JSON.parse(text) as Record<string, unknown>;
          } catch {
            continue;
          }
          if (line.messageId !== messageId || typeof line.outcome !== 'string') continue;
          yield line as unknown as OutcomeLine;
          if (FINAL.includes(line.outcome as Outcome)) return;
        }
      } else await delay(100);
    }
  } finally {
    closeSync(fd);
  }
}

function logSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

export interface ReconcileArgs {
  controller: string;
  key: string;
  wait: boolean;
  timeout: number;
  /** The key's cluster id; default `default`. */
  cluster?: string;
  project?: string;
  topic?: string;
}

/**
 * Runs `levelset reconcile`. With `--wait`, the exit code is 0 for a converged key, 1 for a
 * terminal or malformed outcome, {@link EXIT_NOT_FOUND} (3) when the key's primary does not exist.
 * @throws {CliError} on a usage error, no target, a refused publish, or no final outcome in time. */
export async function runReconcile(argv: ReconcileArgs): Promise<void> {
  const controller = await registeredController(argv.controller);
  const key = parseKey(controller, argv.key);
  const cluster = argv.cluster ?? DEFAULT_CLUSTER;
  const target = await resolveTarget(argv);
  if (argv.wait && !target.stack?.logs.reconcile)
    throw new CliError(
      `--wait follows the local stack's reconcile log only; on Google Cloud read the outcome in Logs Explorer: labels.cluster="${cluster}" labels.controller="${controller.name}" labels.key="${keyString(key)}" jsonPayload.outcome:* (docs/operations.md)`,
      EXIT_USAGE,
    );
  const logPath = target.stack?.logs.reconcile;
  const offset = logPath ? logSize(logPath) : 0;
  const messageId = await publishManual(target, cluster, controller, key);
  const where = cluster === DEFAULT_CLUSTER ? '' : ` of cluster ${cluster}`;
  say(`published ${controller.name} ${keyString(key)}${where} to ${target.describe} (message ${messageId})`);
  if (!argv.wait || !logPath) return;
  const started = Date.now();
  let last: OutcomeLine | undefined;
  let deliveries = 0;
  for await (const line of outcomesOf(logPath, offset, messageId, started + argv.timeout * 1000)) {
    deliveries++;
    last = line;
    const took = line.durationMs !== undefined ? ` in ${formatDuration(line.durationMs)}` : '';
    say(`delivery ${deliveries}: ${line.outcome}${took}${line.err ? ` — ${line.err}` : ''}`);
  }
  if (!last || !FINAL.includes(last.outcome)) {
    throw new CliError(
      last
        ? `no final outcome within ${argv.timeout} s: ${deliveries} deliveries, the last ${last.outcome}; Pub/Sub keeps retrying, then dead-letters (levelset dead-letters list)`
        : `no outcome within ${argv.timeout} s: is the reconcile function running? (levelset status)`,
    );
  }
  const after = formatDuration(Date.now() - started);
  if (last.notFound) {
    say(
      `${controller.name} ${keyString(key)}: not found: nothing to do (no ${controller.primary.kind} ${keyString(key)}; ${after})`,
    );
    process.exitCode = EXIT_NOT_FOUND;
    return;
  }
  say(`${controller.name} ${keyString(key)}: ${last.outcome} after ${after}`);
  if (last.outcome === 'terminal' || last.outcome === 'malformed') process.exitCode = 1;
}

/** Publishes `key` with reason `manual`; @returns the message id. @throws {CliError} when Pub/Sub refuses. */
async function publishManual(
  target: Target,
  cluster: string,
  controller: Controller,
  key: Key,
): Promise<string> {
  const publisher = targetPublisher(target);
  try {
    return await publisher.publish(
      keyMessageOf({ cluster, controller: controller.name, ...key }, 'manual', new Date().toISOString()),
    );
  } catch (err) {
    throw new CliError(`could not publish to ${target.topic}: ${firstLine(err)}`);
  } finally {
    await publisher.close().catch(() => {});
  }
}
