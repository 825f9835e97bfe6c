/**
 * `levelset plan <controller> <key>`: runs one reconcile of `key` with every Kubernetes write sent
 * as a server-side dry-run (`dryRun=All`: the API server validates, defaults, applies and answers
 * the object it would store, and stores nothing; core/k8s/dry-run.ts), and prints the change it
 * would make to each child and to the status: created, changed fields (before → after, from the
 * live object and the API server's answer), pruned. Events are not recorded (they are listed), and
 * a reconcile that acts outside the cluster writes nothing there (`ReconcileContext.dryRun`; the
 * kit does not call `finalize`, except for its external resources, which plan their deletes too):
 * what it would change there is reported through `ReconcileContext.planExternal` and listed as
 * planned changes (`would create projects/p/topics/t`).
 *
 * Exit code: 0 when nothing would change, 1 when something would (in the cluster or outside it, or
 * on failure), 2 on a usage error.
 */
import { Writable } from 'node:stream';
import type { KubernetesObject } from '@kubernetes/client-node';
import { pino } from 'pino';
import type { EventType, ExternalChange, Result } from '../../core/contract/controller.ts';
import { DEFAULT_CLUSTER, type Key, keyString } from '../../core/contract/key.ts';
import { type DryRunWrite, dryRunKubeConfig } from '../../core/k8s/dry-run.ts';
import { errorText, TerminalError } from '../../core/k8s/errors.ts';
import { keyLogger } from '../../core/log.ts';
import { CliError } from '../errors.ts';
import { say } from '../output.ts';
import { clusterError, clusterKubeConfig } from '../target.ts';
import { parseKey, registeredController } from './reconcile.ts';

export interface PlanArgs {
  controller: string;
  key: string;
  output: string;
}

/** One field a write would change: its path (`spec.replicas`, `status.conditions[0].reason`) and values. */
export interface FieldChange {
  path: string;
  /** `undefined`: the field is absent before (added) or after (removed). */
  before?: unknown;
  after?: unknown;
}

/**
 * What a reconcile would do to one object (every write to the same path, taken together), or to one
 * resource outside the cluster (`external`: a cloud resource, named in full).
 */
export interface PlannedChange {
  /** `create` a child, `change` an object (or its `status`), `prune` a child. */
  action: 'create' | 'change' | 'prune';
  /** Outside the cluster: what the kit would do to the cloud resource `object` (`update`, `mark`…). */
  external?: ExternalChange;
  /** `Deployment team-a/web`, `Foo team-a/my-foo status`. */
  object: string;
  /** The changed fields (create: none listed; a write made by a client other than the kit's: none known). */
  fields: FieldChange[];
  /** The requests, `METHOD path`. */
  requests: string[];
}

export interface Plan {
  controller: string;
  key: string;
  changes: PlannedChange[];
  /** Events the reconcile would record (not recorded). */
  events: { type: EventType; reason: string; message: string }[];
  /** The reconcile's own log lines (e.g. `dry-run: would create topic`). */
  log: string[];
  /** The reconcile would end in a terminal failure (Warning Event + `Ready=False`). */
  terminal?: { reason: string; message: string };
  result?: Result;
}

/** Fields every write changes or the API server owns: not shown. */
const NOISE = new Set([
  'metadata.resourceVersion',
  'metadata.managedFields',
  'metadata.generation',
  'metadata.creationTimestamp',
  'metadata.uid',
  'metadata.selfLink',
]);

/** The leaves of `value`, path → value (`a.b[0].c`); an empty object or array is a leaf. */
function leaves(value: unknown, path: string, out: Map<string, unknown>): Map<string, unknown> {
  if (NOISE.has(path)) return out;
  if (Array.isArray(value) && value.length > 0)
    for (const [i, v] of value.entries()) leaves(v, `${path}[${i}]`, out);
  else if (value && typeof value === 'object' && Object.keys(value).length > 0)
    for (const [k, v] of Object.entries(value)) leaves(v, path ? `${path}.${k}` : k, out);
  else out.set(path, value);
  return out;
}

/** The fields that differ between two versions of an object, in `after`'s order, then the removed ones. */
export function changedFields(before: unknown, after: unknown): FieldChange[] {
  const was = leaves(before, '', new Map());
  const now = leaves(after, '', new Map());
  const out: FieldChange[] = [];
  for (const [path, v] of now)
    if (JSON.stringify(was.get(path)) !== JSON.stringify(v))
      out.push({ path, ...(was.has(path) ? { before: was.get(path) } : {}), after: v });
  for (const [path, v] of was) if (!now.has(path)) out.push({ path, before: v });
  return out;
}

function describeObject(o: KubernetesObject | undefined, path: string): string {
  const name = o?.metadata?.name;
  if (!o?.kind || !name) return path;
  return `${o.kind} ${keyString({ namespace: o.metadata?.namespace ?? '', name })}`;
}

/**
 * The changes of the logged dry-run writes, one per object path in the order first written
 * (a create's path is its collection's, with the answer's name).
 */
export function plannedChanges(writes: readonly DryRunWrite[]): PlannedChange[] {
  const groups = new Map<string, DryRunWrite[]>();
  for (const w of writes) {
    const id = w.method === 'POST' ? `${w.path}/${w.after?.metadata?.name ?? groups.size}` : w.path;
    groups.set(id, [...(groups.get(id) ?? []), w]);
  }
  return [...groups.entries()].map(([path, ws]) => {
    const first = ws[0] as DryRunWrite;
    const last = ws[ws.length - 1] as DryRunWrite;
    const requests = ws.map((w) => `${w.method} ${w.path}`);
    const object = describeObject(last.after ?? first.before ?? (first.body as KubernetesObject), path);
    const status = path.endsWith('/status') ? ' status' : '';
    if (ws.some((w) => w.method === 'DELETE')) return { action: 'prune', object, fields: [], requests };
    if (first.method === 'POST' && !first.before) return { action: 'create', object, fields: [], requests };
    const fields = first.before && last.after ? changedFields(first.before, last.after) : [];
    return { action: 'change', object: `${object}${status}`, fields, requests };
  });
}

/**
 * Runs one reconcile of `key` in dry-run mode and collects what it would do.
 * @throws {CliError} when the cluster is unreachable or the reconcile fails (other than terminally)
 */
export async function planReconcile(
  controllerName: string,
  keyText: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Plan> {
  const controller = await registeredController(controllerName);
  const key: Key = parseKey(controller, keyText);
  const cluster = clusterKubeConfig(env);
  const { kubeConfig, writes } = dryRunKubeConfig(cluster);
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) {
        const { message, ...rest } = JSON.parse(line) as Record<string, unknown>;
        const detail = ['topic', 'subscription', 'resource', 'finalizer', 'changes']
          .filter((k) => rest[k] !== undefined)
          .map((k) => `${k}: ${JSON.stringify(rest[k])}`);
        lines.push(`${message}${detail.length ? ` (${detail.join(', ')})` : ''}`);
      }
      done();
    },
  });
  const log = keyLogger(pino({ level: env.LOG_LEVEL ?? 'info', messageKey: 'message' }, sink), {
    cluster: DEFAULT_CLUSTER,
    controller: controller.name,
    ...key,
  });
  const events: Plan['events'] = [];
  const external: PlannedChange[] = [];
  const plan: Plan = { controller: controller.name, key: keyString(key), changes: [], events, log: lines };
  try {
    const result = await controller.reconcile(key, {
      cluster: DEFAULT_CLUSTER,
      kubeConfig,
      log,
      dryRun: true,
      planExternal(change) {
        const action =
          change.action === 'create' ? 'create' : change.action === 'delete' ? 'prune' : 'change';
        external.push({ action, object: change.resource, fields: [], requests: [], external: change });
      },
      events: {
        async record(_object, type, reason, message) {
          events.push({ type, reason, message });
        },
      },
    });
    if (result) plan.result = result;
  } catch (err) {
    if (err instanceof TerminalError) plan.terminal = { reason: err.reason, message: err.message };
    else {
      try {
        clusterError(cluster, err);
      } catch (e) {
        if (e instanceof CliError) throw e;
      }
      throw new CliError(`the reconcile of ${plan.key} failed: ${errorText(err)}`);
    }
  }
  plan.changes = [...external, ...plannedChanges(writes)];
  return plan;
}

const show = (v: unknown) => {
  const text = v === undefined ? '(absent)' : JSON.stringify(v);
  return text.length > 100 ? `${text.slice(0, 97)}...` : text;
};

/** Runs `levelset plan`; exit code 1 when the reconcile would change something. */
export async function runPlan(argv: PlanArgs, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const plan = await planReconcile(argv.controller, argv.key, env);
  if (plan.changes.length > 0) process.exitCode = 1;
  if (argv.output === 'json') {
    say(JSON.stringify(plan, null, 2));
    return;
  }
  say(`plan ${plan.controller} ${plan.key} (server-side dry-run: nothing was written)`);
  const sign = { create: '+', change: '~', prune: '-' } as const;
  for (const c of plan.changes) {
    if (c.external) {
      say(
        `  ${sign[c.action]} ${c.object} (would ${c.external.action}, outside the cluster: ${c.external.service})`,
      );
      continue;
    }
    say(`  ${sign[c.action]} ${c.object} (${c.action})`);
    for (const f of c.fields) say(`      ${f.path}: ${show(f.before)} → ${show(f.after)}`);
    if (c.action === 'change' && c.fields.length === 0) say(`      ${c.requests.join(', ')}`);
  }
  for (const e of plan.events)
    say(`  event (not recorded): ${e.type} ${e.reason} ${JSON.stringify(e.message)}`);
  for (const line of plan.log) say(`  log: ${line}`);
  if (plan.terminal) say(`  terminal: ${plan.terminal.reason}: ${plan.terminal.message}`);
  if (plan.result?.notFound) say('  not found: nothing to do');
  if (plan.result?.requeueAfterMs !== undefined) say(`  requeue after ${plan.result.requeueAfterMs} ms`);
  if (plan.result?.rateLimited)
    say(`  rate limited (retry after: ${plan.result.rateLimited.retryAfterMs ?? '?'} ms)`);
  const count = (a: PlannedChange['action']) => plan.changes.filter((c) => c.action === a).length;
  say(
    plan.changes.length === 0
      ? 'no changes: converged'
      : `${count('create')} to create, ${count('change')} to change, ${count('prune')} to prune`,
  );
}
