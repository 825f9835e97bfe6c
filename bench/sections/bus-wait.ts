/**
 * The bus's wait of a serverless change (the key message's publishTime → the start of the reconcile
 * it pushed), and Levelset's own time (end to end minus that wait), measured without tracing so that
 * the end-to-end figures beside them are the untraced ones (the e2e section's report text).
 */
import type { Message } from '@google-cloud/pubsub';
import { PubSub } from '@google-cloud/pubsub';
import { emulatorClientOptions } from '../../core/publish.ts';
import type { LogLine } from '../../local/service.ts';
import type { LocalStack } from '../../local/stack.ts';
import { type Figure, figuresOf, quantiles } from '../report.ts';
import { sleep } from '../support.ts';
import type { TimedChange } from './changes.ts';

/** Each change's bus wait (ms), for the changes whose first delivery was found. */
export type BusWaits = Map<TimedChange, number>;

/** A `reconcile` outcome log line, with its Cloud Logging labels. */
export interface DeliveryLine {
  line: LogLine;
  labels: { controller?: string; key?: string } | undefined;
}

/**
 * Starts recording the publish time of every key message on `stack`'s live topic. `delivered` is
 * filled by the caller's `onLog` with the `reconcile` outcome lines.
 */
export async function recordBusWaits(stack: LocalStack, delivered: DeliveryLine[]) {
  const pubsub = new PubSub({
    projectId: stack.emulator.projectId,
    ...emulatorClientOptions(stack.emulator.host),
  });
  const subscriptionId = 'bench-published';
  const [subscription] = await pubsub.topic(stack.topology.topic).createSubscription(subscriptionId);
  /** message id → publishTime, epoch ms. */
  const publishedAt = new Map<string, number>();
  subscription.on('message', (m: Message) => {
    publishedAt.set(m.id, m.publishTime.getTime());
    m.ack();
  });
  return {
    /** Each change's wait: its first delivery of the change's key that started within the change. */
    async waits(changes: readonly TimedChange[]): Promise<BusWaits> {
      const starts = delivered.map((d) => ({
        controller: d.labels?.controller,
        key: d.labels?.key,
        messageId: String(d.line.messageId ?? ''),
        start: timestampMs(d.line) - Number(d.line.durationMs ?? 0),
      }));
      // The pull subscription may lag the pushes: wait until it saw every delivered message.
      for (let i = 0; i < 50 && starts.some((s) => !publishedAt.has(s.messageId)); i++) await sleep(100);
      const out: BusWaits = new Map();
      for (const c of changes) {
        const first = starts
          .filter((s) => s.controller === c.controller && s.key === c.key && s.start >= c.t0 - 1)
          .filter((s) => s.start <= c.at)
          .sort((a, b) => a.start - b.start)[0];
        const published = first && publishedAt.get(first.messageId);
        if (first && published !== undefined) out.set(c, first.start - published);
      }
      return out;
    },
    async stop() {
      await subscription.close().catch(() => {});
      await pubsub.close().catch(() => {});
    },
  };
}

/** A log line's Cloud Logging `timestamp` ({seconds, nanos}) in epoch ms. */
function timestampMs(line: LogLine): number {
  const t = line.timestamp as { seconds?: number; nanos?: number } | undefined;
  return (t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;
}

/**
 * "Levelset's own time" rows of one kind of change: p50 and p95 of (end to end − the bus's wait),
 * each beside the in-process end to end's (`inProcessMs`, ms) with the targets, and the
 * bus's wait itself beside the serverless end to end.
 */
export function ownTimeFigures(
  kind: 'secret' | 'foo',
  changes: readonly TimedChange[],
  waits: BusWaits,
  inProcessMs: readonly number[],
): Figure[] {
  const label = kind === 'secret' ? 'Secret change' : 'Foo change';
  const timed = changes.filter((c) => waits.has(c));
  const own = quantiles(timed.map((c) => c.at - c.t0 - (waits.get(c) as number)));
  const wait = quantiles(timed.map((c) => waits.get(c) as number));
  const e2e = quantiles(timed.map((c) => c.at - c.t0));
  const ip = quantiles(inProcessMs);
  const figure = figuresOf('e2e');
  const inProcess = (value: number) => ({ name: 'in-process end to end', value });
  return [
    figure(
      `${label}: Levelset's own time (serverless end to end − the bus's wait, published → pushed), p50 (n=${own.n})`,
      own.p50,
      'ms',
      inProcess(ip.p50),
      { text: '≤ 1.5×', met: own.p50 <= 1.5 * ip.p50 },
    ),
    figure(`${label}: Levelset's own time, p95 (n=${own.n})`, own.p95, 'ms', inProcess(ip.p95), {
      text: '≤ 2.0×',
      met: own.p95 <= 2 * ip.p95,
    }),
    figure(
      `${label}: the bus's wait (the emulator's publishTime → the reconcile started), p50 (n=${wait.n})`,
      wait.p50,
      'ms',
      { name: 'the same changes, serverless end to end p50', value: e2e.p50 },
    ),
  ];
}
