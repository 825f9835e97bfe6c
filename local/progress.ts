/**
 * Readable progress lines for `npm start`, from the processes' Cloud Logging JSON lines.
 */
import { LABELS } from '../functions/log.ts';
import type { LogLine } from './service.ts';

/**
 * One line for a log entry worth showing (reconcile outcomes, warnings, errors, relay start-up),
 * or `undefined` for chatter. Never prints fields beyond message, labels, outcome and error.
 */
export function formatLogLine(service: string, line: LogLine): string | undefined {
  if (line.raw !== undefined) return undefined;
  const labels = (line[LABELS] ?? {}) as { controller?: string; key?: string };
  const severity = line.severity ?? 'INFO';
  const who = labels.controller ? `${labels.controller} ${labels.key ?? ''}`.trim() : '';
  const outcome = typeof line.outcome === 'string' ? line.outcome : undefined;
  const error = typeof line.err === 'string' ? ` — ${line.err}` : '';
  if (service === 'reconcile' && outcome) {
    const ms = typeof line.durationMs === 'number' ? ` (${line.durationMs} ms)` : '';
    const mark = outcome === 'success' || outcome === 'requeue' ? '✓' : outcome === 'transient' ? '↻' : '✗';
    return `${service.padEnd(11)} ${mark} ${who} ${outcome}${ms}${error}`;
  }
  if (severity === 'ERROR' || severity === 'WARNING' || severity === 'CRITICAL') {
    return `${service.padEnd(11)} ${severity} ${who ? `${who}: ` : ''}${line.message ?? ''}${error}`;
  }
  if (service === 'relay' && severity === 'INFO' && /ready|started|stopp/i.test(line.message ?? '')) {
    return `${service.padEnd(11)} ${line.message}`;
  }
  return undefined;
}
