/**
 * Readable progress lines for `npm start` (`levelset dev`'s pretty format), from the processes'
 * Cloud Logging JSON lines.
 */
import { pino } from 'pino';
import { DEFAULT_CLUSTER } from '../core/contract/key.ts';
import { LABELS } from '../core/log.ts';
import type { LogLine } from './service.ts';

/** Cloud Logging's `severity` of a line without pino's numeric `level` (@google-cloud/pino-logging-gcp-config). */
const SEVERITY_LEVEL: Record<string, number> = { DEBUG: 20, INFO: 30, WARNING: 40, ERROR: 50, CRITICAL: 60 };

/** Fields every line carries (the logger's, the delivery's, Cloud Logging's): not what a controller wrote. */
export const FRAMEWORK_FIELDS: ReadonlySet<string> = new Set([
  'severity',
  'level',
  'time',
  'timestamp',
  'pid',
  'hostname',
  'message',
  'msg',
  'serviceContext',
  'messageId',
  'reason',
  'enqueuedAt',
  'outcome',
  'durationMs',
  'requeueAfterMs',
  'notFound',
  'err',
]);

/** A key's lines waiting for its outcome line, at most this many (older ones are printed then). */
const MAX_PENDING_PER_KEY = 50;
const INDENT = ' '.repeat(14);

/** `name=value`, the value bare when it is a word, else as JSON: how every log view prints a field. */
export function fieldText(name: string, value: unknown): string {
  const text = typeof value === 'string' && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value);
  return `${name}=${text}`;
}

/**
 * `name=value` ({@link fieldText}) of each field a controller's log call added
 * (`log.info({ subscription }, …)`): every field of a line but {@link FRAMEWORK_FIELDS}, Cloud
 * Logging's and `except`. The live view of `npm start` and `levelset logs` both print these.
 */
export function ownFields(
  fields: Record<string, unknown>,
  except: ReadonlySet<string> = new Set(),
): string[] {
  return Object.entries(fields)
    .filter(
      ([name, value]) =>
        !FRAMEWORK_FIELDS.has(name) &&
        !except.has(name) &&
        !name.startsWith('logging.googleapis.com/') &&
        value !== undefined,
    )
    .map(([name, value]) => fieldText(name, value));
}

function fieldsOf(line: LogLine): string {
  const parts = ownFields(line as Record<string, unknown>);
  return parts.length > 0 ? `  ${parts.join(' ')}` : '';
}

/** Options of {@link createPrettyLog}. */
export interface PrettyLogOptions {
  /** Lines below this pino level are not shown (`--log-level`); default `info`. */
  level?: pino.Level;
}

/** Turns log lines into the pretty view's lines. */
export interface PrettyLog {
  /** The lines to print for `line` of `service` now (often none: chatter, or held for its key's outcome). */
  lines(service: string, line: LogLine): string[];
}

/**
 * The pretty view: one line per reconcile outcome (`reconcile   ✓ foo demo/x success (12 ms)`) with
 * the key's own log lines of that delivery under it — what a controller's `ctx.log.info(…)` wrote,
 * its fields included — held until the outcome line comes; warnings and errors at once; the relay's
 * start and stop. Outcome lines always show; every other line below `level` is hidden, and so is a
 * line that is not JSON (chatter of the runtime, functions-framework).
 */
export function createPrettyLog(options: PrettyLogOptions = {}): PrettyLog {
  const threshold = pino.levels.values[options.level ?? 'info'] ?? 30;
  const pending = new Map<string, string[]>();
  return {
    lines(service, line) {
      if (line.raw !== undefined) return [];
      const labels = (line[LABELS] ?? {}) as { cluster?: string; controller?: string; key?: string };
      const severity = line.severity ?? 'INFO';
      const level = typeof line.level === 'number' ? line.level : (SEVERITY_LEVEL[severity] ?? 30);
      // A key of a named cluster (levelset dev --clusters N) says which: `cluster-2/foo demo/x`.
      const cluster = labels.cluster && labels.cluster !== DEFAULT_CLUSTER ? `${labels.cluster}/` : '';
      const who = labels.controller ? `${cluster}${labels.controller} ${labels.key ?? ''}`.trim() : '';
      const outcome = typeof line.outcome === 'string' ? line.outcome : undefined;
      const error = typeof line.err === 'string' ? ` — ${line.err}` : '';
      const id = `${service} ${who}`;
      if (service === 'reconcile' && outcome) {
        const ms = typeof line.durationMs === 'number' ? ` (${line.durationMs} ms)` : '';
        const mark =
          outcome === 'success' || outcome === 'requeue' ? '✓' : outcome === 'transient' ? '↻' : '✗';
        const notFound = line.notFound === true ? ' — not found: nothing to do' : '';
        const held = pending.get(id) ?? [];
        pending.delete(id);
        return [`${service.padEnd(11)} ${mark} ${who} ${outcome}${ms}${notFound}${error}`, ...held];
      }
      if (service === 'admission' && outcome) {
        // One line per admission call the function logged (a denial or failure; an allowed call at debug).
        const webhook = (line[LABELS] as { webhook?: string } | undefined)?.webhook ?? '';
        const object = [line.namespace, line.name].filter(Boolean).join('/');
        const mark = outcome === 'allowed' || outcome === 'patched' ? '✓' : '✗';
        const ms = typeof line.durationMs === 'number' ? ` (${line.durationMs} ms)` : '';
        return [
          `${service.padEnd(11)} ${mark} ${webhook} ${line.operation ?? ''} ${line.resource ?? ''} ${object} ${outcome}${ms} — ${line.message ?? ''}${error}`,
        ];
      }
      if (level < threshold) return [];
      if (level >= 40) {
        return [
          `${service.padEnd(11)} ${severity} ${who ? `${who}: ` : ''}${line.message ?? ''}${error}${fieldsOf(line)}`,
        ];
      }
      if (service === 'reconcile' && who) {
        // A controller's own line: shown under its key's outcome line.
        const shown = severity === 'INFO' ? '' : `${severity} `;
        const held = pending.get(id) ?? [];
        held.push(`${INDENT}${shown}${line.message ?? ''}${fieldsOf(line)}`);
        pending.set(id, held);
        if (held.length > MAX_PENDING_PER_KEY) return [`${service.padEnd(11)} ${who}:`, ...held.splice(0)];
        return [];
      }
      if (service === 'relay' && severity === 'INFO' && /ready|started|stopp/i.test(line.message ?? '')) {
        return [`${service.padEnd(11)} ${line.message}`];
      }
      return [];
    },
  };
}
