import { keyString } from '../../core/contract/key.ts';
import { clusterOf, DEAD_LETTER_ATTRIBUTES, type KeyMessage, keyMessageSchema } from '../../core/message.ts';
import { CliError, firstLine } from '../errors.ts';
import { say, table } from '../output.ts';
import { createSubscriber, type PulledMessage } from '../pubsub.ts';
import { resolveTarget, type Target, targetPublisher } from '../target.ts';

/** A dead letter as the commands show it; `message` is `undefined` when it is not a key message (v1 or v2). */
export interface DeadLetter {
  pulled: PulledMessage;
  message: KeyMessage | undefined;
  /** Deliveries before it was dead-lettered; `undefined` when Pub/Sub did not say. */
  deliveryAttempts: number | undefined;
  /** When the key was first published to the keys topic (its first delivery, hence failure, followed). */
  firstPublished: string | undefined;
  /** When it was dead-lettered (the dead letter's own publish time). */
  deadLetteredAt: string | undefined;
}

/** Decodes a pulled dead letter. */
export function decodeDeadLetter(pulled: PulledMessage): DeadLetter {
  let message: KeyMessage | undefined;
  try {
    const parsed = keyMessageSchema.safeParse(JSON.parse(pulled.data.toString('utf8')));
    if (parsed.success) message = parsed.data;
  } catch {
    // not JSON
  }
  const attempts = Number(pulled.attributes[DEAD_LETTER_ATTRIBUTES.deliveryAttempts]);
  return {
    pulled,
    message,
    deliveryAttempts: Number.isInteger(attempts) ? attempts : undefined,
    firstPublished: pulled.attributes[DEAD_LETTER_ATTRIBUTES.sourcePublishTime],
    deadLetteredAt: pulled.publishTime?.toISOString(),
  };
}

/** ` in cluster <id>` for a key of a named cluster, `''` for the default cluster's. */
function inCluster(m: KeyMessage): string {
  return m.v === 2 ? ` in cluster ${m.cluster}` : '';
}

/** Whether a dead letter is of `cluster` (every letter when `cluster` is undefined; a non-key message never is). */
function ofCluster(d: DeadLetter, cluster: string | undefined): boolean {
  return cluster === undefined || (d.message !== undefined && clusterOf(d.message) === cluster);
}

async function pullDeadLetters(target: Target, limit: number) {
  const subscriber = createSubscriber(target);
  const pulled = await subscriber.pull(target.deadLetterSubscription, limit).catch(async (err: unknown) => {
    await subscriber.close().catch(() => {});
    throw err;
  });
  return { subscriber, letters: pulled.map(decodeDeadLetter) };
}

function rows(letters: DeadLetter[]): string[][] {
  return letters.map((d) => [
    d.message ? clusterOf(d.message) : '?',
    d.message?.controller ?? '(not a key message)',
    d.message ? keyString(d.message) : d.pulled.data.toString('utf8').slice(0, 40),
    d.deliveryAttempts === undefined ? '?' : String(d.deliveryAttempts),
    d.firstPublished ?? '?',
    d.deadLetteredAt ?? '?',
  ]);
}

const HEAD = ['cluster', 'controller', 'key', 'attempts', 'first failure (first published)', 'dead-lettered'];

export interface ListArgs {
  limit: number;
  output: string;
  project?: string;
  topic?: string;
  cluster?: string;
}
export interface ReplayArgs {
  limit: number;
  'dry-run': boolean;
  project?: string;
  topic?: string;
  cluster?: string;
}

/** Runs `levelset dead-letters list`: pulls, shows, releases the leases (nothing is acknowledged). */
export async function runDeadLettersList(argv: ListArgs): Promise<void> {
  const target = await resolveTarget(argv);
  const { subscriber, letters: pulled } = await pullDeadLetters(target, argv.limit);
  const letters = pulled.filter((d) => ofCluster(d, argv.cluster));
  try {
    await subscriber.release(
      target.deadLetterSubscription,
      pulled.map((d) => d.pulled.ackId),
    );
  } finally {
    await subscriber.close().catch(() => {});
  }
  if (argv.output === 'json') {
    say(
      JSON.stringify(
        letters.map((d) => ({
          cluster: d.message ? clusterOf(d.message) : undefined,
          controller: d.message?.controller,
          key: d.message ? keyString(d.message) : undefined,
          deliveryAttempts: d.deliveryAttempts,
          firstPublished: d.firstPublished,
          deadLetteredAt: d.deadLetteredAt,
          messageId: d.pulled.messageId,
          message: d.message,
        })),
        null,
        2,
      ),
    );
    return;
  }
  if (letters.length === 0) {
    say(`no dead letters in ${target.deadLetterSubscription}`);
    return;
  }
  say(table(HEAD, rows(letters)));
  say(
    `${letters.length}${letters.length === argv.limit ? '+' : ''} dead letters in ${target.deadLetterSubscription}`,
  );
}

/** Runs `levelset dead-letters replay`. @throws {CliError} when some keys could not be republished (they stay). */
export async function runDeadLettersReplay(argv: ReplayArgs): Promise<void> {
  const target = await resolveTarget(argv);
  const { subscriber, letters: pulled } = await pullDeadLetters(target, argv.limit);
  const letters = pulled.filter((d) => ofCluster(d, argv.cluster));
  const publisher = argv['dry-run'] ? undefined : targetPublisher(target);
  // Letters of other clusters (--cluster) stay, untouched.
  const keep: string[] = pulled.filter((d) => !ofCluster(d, argv.cluster)).map((d) => d.pulled.ackId);
  let replayed = 0;
  let failed = 0;
  try {
    for (const d of letters) {
      const m = d.message;
      if (!m) {
        keep.push(d.pulled.ackId);
        say(`kept ${d.pulled.messageId}: not a key message`);
        continue;
      }
      if (!publisher) {
        keep.push(d.pulled.ackId);
        say(`would replay ${m.controller} ${keyString(m)}${inCluster(m)}`);
        continue;
      }
      try {
        const id = await publisher.publish({
          ...m,
          reason: 'manual',
          enqueuedAt: new Date().toISOString(),
        });
        await subscriber.ack(target.deadLetterSubscription, [d.pulled.ackId]);
        replayed++;
        say(`replayed ${m.controller} ${keyString(m)} (message ${id})${inCluster(m)}`);
      } catch (err) {
        failed++;
        keep.push(d.pulled.ackId);
        say(`kept ${m.controller} ${keyString(m)}: ${firstLine(err)}`);
      }
    }
    await subscriber.release(target.deadLetterSubscription, keep);
  } finally {
    await publisher?.close().catch(() => {});
    await subscriber.close().catch(() => {});
  }
  if (argv['dry-run'])
    say(`would replay ${letters.filter((d) => d.message).length} of ${letters.length} dead letters`);
  else say(`replayed ${replayed} of ${letters.length} dead letters to ${target.topic}`);
  if (failed)
    throw new CliError(
      `${failed} dead letters could not be republished; they stay in ${target.deadLetterSubscription}`,
    );
}
