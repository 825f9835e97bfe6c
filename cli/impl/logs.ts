/**
 * `levelset logs`: the log lines of Levelset's keys, filtered the way docs/operations.md's Logs
 * Explorer queries filter them — `labels.controller`, `labels.key`, `jsonPayload.outcome` — from the
 * local stack's log files (`<stateDir>/logs/<service>.jsonl`, one Cloud Logging JSON line per line)
 * or, with `--project`, from Cloud Logging itself (the `@google-cloud/logging` client, `entries.list`
 * with the same filter). Both print the same {@link LogRecord}s the same way; `--follow` keeps
 * printing new lines (local: the files as they grow; Cloud Logging: a poll every 5 s).
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import { type Entry, Logging } from '@google-cloud/logging';
import { LABELS } from '../../core/log.ts';
import { fieldText, ownFields } from '../../local/progress.ts';
import { CliError, firstLine } from '../errors.ts';
import { say } from '../output.ts';
import { resolveTarget } from '../target.ts';

export interface LogsArgs {
  controller?: string;
  key?: string;
  outcome?: string;
  follow: boolean;
  limit: number;
  output: string;
  project?: string;
  topic?: string;
}

/** One log line, from a local file or from Cloud Logging. */
export interface LogRecord {
  /** RFC 3339 with ms. */
  timestamp: string;
  /** Cloud Logging's severity name: `INFO`, `WARNING`, `ERROR`… */
  severity: string;
  /** `reconcile`, `resync`, `relay` (the local log file; on Google Cloud the function or container). */
  service: string;
  controller?: string;
  key?: string;
  message: string;
  /** The rest of the line's JSON payload (outcome, durationMs, reason, …). */
  fields: Record<string, unknown>;
}

/** The filter of `levelset logs`' flags. */
export interface LogsFilter {
  controller?: string;
  key?: string;
  outcome?: string;
}

/**
 * The Logging query language filter of `filter`, as docs/operations.md's Logs Explorer queries
 * write it: every line labelled with a controller (a key's lines: relay publishes, deliveries,
 * the controller's own lines), narrowed by controller, key and outcome.
 */
export function cloudLoggingFilter(filter: LogsFilter): string {
  const quote = (v: string) => JSON.stringify(v);
  return [
    filter.controller ? `labels.controller=${quote(filter.controller)}` : 'labels.controller:*',
    ...(filter.key ? [`labels.key=${quote(filter.key)}`] : []),
    ...(filter.outcome ? [`jsonPayload.outcome=${quote(filter.outcome)}`] : []),
  ].join(' AND ');
}

/** Whether `record` passes `filter`: the same rule as {@link cloudLoggingFilter}, applied locally. */
export function matchesFilter(record: LogRecord, filter: LogsFilter): boolean {
  if (record.controller === undefined) return false;
  if (filter.controller && record.controller !== filter.controller) return false;
  if (filter.key && record.key !== filter.key) return false;
  if (filter.outcome && record.fields.outcome !== filter.outcome) return false;
  return true;
}

/** Fields of a line that the record holds elsewhere, or that only the logging library uses. */
const HIDDEN = new Set([
  'severity',
  'level',
  'timestamp',
  'time',
  'pid',
  'hostname',
  'message',
  'msg',
  'serviceContext',
  LABELS,
  'logging.googleapis.com/insertId',
]);

function fieldsOf(payload: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(payload).filter(([k]) => !HIDDEN.has(k)));
}

/** `{seconds, nanos}` (pino's Google Cloud config), an RFC 3339 string or a Date, as RFC 3339 with ms. */
function isoOf(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') return new Date(value).toISOString();
  const t = value as { seconds?: number | string; nanos?: number } | undefined;
  if (t?.seconds !== undefined)
    return new Date(Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6)).toISOString();
  return new Date(0).toISOString();
}

/** A local log line (one JSON object) as a record; `undefined` when it is not JSON. */
export function localRecord(service: string, line: string): LogRecord | undefined {
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const labels = (parsed[LABELS] ?? {}) as { controller?: string; key?: string };
  return {
    timestamp: isoOf(parsed.timestamp ?? parsed.time),
    severity: String(parsed.severity ?? 'DEFAULT'),
    service,
    ...(labels.controller !== undefined ? { controller: labels.controller } : {}),
    ...(labels.key !== undefined ? { key: labels.key } : {}),
    message: String(parsed.message ?? parsed.msg ?? ''),
    fields: fieldsOf(parsed),
  };
}

/** google.logging.type.LogSeverity numbers (the REST transport's enum encoding) to names. */
const SEVERITIES: Record<number, string> = {
  0: 'DEFAULT',
  100: 'DEBUG',
  200: 'INFO',
  300: 'NOTICE',
  400: 'WARNING',
  500: 'ERROR',
  600: 'CRITICAL',
  700: 'ALERT',
  800: 'EMERGENCY',
};

/**
 * A Cloud Logging entry as a record: the labels Cloud Logging made of `logging.googleapis.com/labels`,
 * the service from the resource (`levelset-reconcile` → `reconcile`, container `relay`).
 */
export function cloudRecord(entry: Entry): LogRecord {
  const m = entry.metadata;
  const payload = (
    typeof entry.data === 'object' && entry.data ? entry.data : { message: String(entry.data) }
  ) as Record<string, unknown>;
  const labels = (m.labels ?? {}) as { controller?: string; key?: string };
  const resource = (m.resource?.labels ?? {}) as { service_name?: string; container_name?: string };
  const service = resource.service_name?.replace(/^.*-/, '') ?? resource.container_name ?? 'unknown';
  const severity =
    typeof m.severity === 'number'
      ? (SEVERITIES[m.severity] ?? String(m.severity))
      : String(m.severity ?? 'DEFAULT');
  return {
    timestamp: isoOf(m.timestamp),
    severity,
    service,
    ...(labels.controller !== undefined ? { controller: labels.controller } : {}),
    ...(labels.key !== undefined ? { key: labels.key } : {}),
    message: String(payload.message ?? ''),
    fields: fieldsOf(payload),
  };
}

/** Levelset's fields shown first on a line, in this order, when present. */
const SHOWN = ['outcome', 'durationMs', 'reason', 'notFound', 'drift', 'eventReason', 'changes', 'err'];

/**
 * One line for a person: `time severity service controller key message field=value…`: Levelset's
 * fields ({@link SHOWN}), then the controller's own (`subscription=…`), as `npm start`'s live view
 * prints them (local/progress.ts `ownFields`).
 */
export function formatRecord(r: LogRecord): string {
  const fields = [
    ...SHOWN.filter((k) => r.fields[k] !== undefined).map((k) => fieldText(k, r.fields[k])),
    ...ownFields(r.fields, new Set(SHOWN)),
  ];
  return [
    r.timestamp,
    r.severity.padEnd(7),
    r.service.padEnd(9),
    r.controller ?? '-',
    r.key ?? '-',
    r.message,
    ...fields,
  ]
    .join(' ')
    .trimEnd();
}

/** Where records come from: the last `limit`, then (follow) the ones written after. */
export interface LogSource {
  last(limit: number): Promise<LogRecord[]>;
  /** Yields records written after those {@link LogSource.last} returned, until the process stops. */
  follow(): AsyncIterable<LogRecord[]>;
}

/** The local stack's log files (service → path). */
export function localLogSource(files: Record<string, string>, filter: LogsFilter): LogSource {
  const offsets = new Map<string, number>();
  const read = (service: string, path: string): LogRecord[] => {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return []; // not written yet
    }
    try {
      const size = statSync(path).size;
      const from = offsets.get(service) ?? 0;
      if (size < from) offsets.set(service, 0); // truncated: a new stack
      const start = Math.min(from, size);
      const buffer = Buffer.alloc(size - start);
      readSync(fd, buffer, 0, buffer.length, start);
      const text = buffer.toString('utf8');
      const complete = text.lastIndexOf('\n') + 1; // a line still being written waits
      offsets.set(service, start + complete);
      return text
        .slice(0, complete)
        .split('\n')
        .filter(Boolean)
        .map((line) => localRecord(service, line))
        .filter((r): r is LogRecord => r !== undefined && matchesFilter(r, filter));
    } finally {
      closeSync(fd);
    }
  };
  const readAll = () =>
    Object.entries(files)
      .flatMap(([service, path]) => read(service, path))
      .sort((a, b) => a.timestamp.localeCompare(b.timestamp));
  return {
    async last(limit) {
      const records = readAll(); // read to the end either way: follow starts after it
      return limit > 0 ? records.slice(-limit) : [];
    },
    async *follow() {
      for (;;) {
        await delay(500);
        const records = readAll();
        if (records.length > 0) yield records;
      }
    },
  };
}

/** Cloud Logging through `logging` (entries.list with {@link cloudLoggingFilter}); follow polls every `pollMs`. */
export function cloudLogSource(logging: Logging, filter: LogsFilter, pollMs = 5000): LogSource {
  const query = cloudLoggingFilter(filter);
  let newest: string | undefined;
  return {
    async last(limit) {
      if (limit <= 0) {
        newest = new Date().toISOString();
        return [];
      }
      const [entries] = await logging.getEntries({
        filter: query,
        orderBy: 'timestamp desc',
        pageSize: limit,
        maxResults: limit,
        autoPaginate: false,
      });
      const records = entries.map(cloudRecord).reverse();
      newest = records.at(-1)?.timestamp ?? new Date().toISOString();
      return records;
    },
    async *follow() {
      for (;;) {
        await delay(pollMs);
        const [entries] = await logging.getEntries({
          filter: `${query} AND timestamp>${JSON.stringify(newest ?? new Date().toISOString())}`,
          orderBy: 'timestamp asc',
          pageSize: 1000,
          autoPaginate: false,
        });
        const records = entries.map(cloudRecord);
        newest = records.at(-1)?.timestamp ?? newest;
        if (records.length > 0) yield records;
      }
    },
  };
}

/**
 * Runs `levelset logs`.
 * @param deps `logging`: the Cloud Logging client (default: Application Default Credentials on the target's project)
 */
export async function runLogs(
  argv: LogsArgs,
  deps: { logging?: Logging; out?: (line: string) => void } = {},
): Promise<void> {
  const out = deps.out ?? say;
  const filter: LogsFilter = { controller: argv.controller, key: argv.key, outcome: argv.outcome };
  const target = await resolveTarget(argv);
  let source: LogSource;
  if (target.kind === 'local') {
    source = localLogSource(target.stack?.logs ?? {}, filter);
  } else {
    const logging = deps.logging ?? new Logging({ projectId: target.projectId });
    source = cloudLogSource(logging, filter);
  }
  const print = (records: LogRecord[]) => {
    for (const r of records) out(argv.output === 'json' ? JSON.stringify(r) : formatRecord(r));
  };
  try {
    print(await source.last(argv.limit));
    if (argv.follow) for await (const records of source.follow()) print(records);
  } catch (err) {
    if (target.kind === 'cloud')
      throw new CliError(
        `Cloud Logging (${target.describe}): ${firstLine(err)} (needs roles/logging.viewer; filter: ${cloudLoggingFilter(filter)})`,
      );
    throw err;
  }
}
