/**
 * Section `retries`: what one failing key costs every other key when Pub/Sub applies its push
 * backoff (issue 32, docs/architecture.md decision 40), with the failing key's deliveries answered
 * 500 (before) or 204 + requeue (after), beside no failing key (idle); the report's text says how.
 */
import { createServer } from 'node:http';
import { createKeyPublisher } from '../../core/publish.ts';
import { startPushProxy } from '../../local/push-proxy.ts';
import { waitFor } from '../../test/support/wait.ts';
import type { Section } from '../environment.ts';
import { figuresOf, quantiles } from '../report.ts';
import { keyMessage, listen, quiet, sleep } from '../support.ts';

/** The endpoint's answer time, ms (a reconcile's). */
const ANSWER_MS = 20;
/** The failing key's publishes per second. */
const FAILURES_PER_S = 5;
/** ms between two other keys' publishes. */
const OTHER_EVERY_MS = 100;
/** How long a run waits for the other keys once they are all published, ms (tiny runs: 5 s). */
const WAIT_MS = { full: 60_000, tiny: 5_000 } as const;

type Run = 'idle' | 'before' | 'after';

export const retries: Section = {
  name: 'retries',
  async run({ sizes, log, emulator, tiny }) {
    const waitMs = WAIT_MS[tiny ? 'tiny' : 'full'];
    const env = await emulator();
    const { pubsub } = env;
    const { projectId } = env.emulator;
    /** One run; the other keys' latencies, ms. */
    const measure = async (run: Run): Promise<{ latencies: number[]; unanswered: number }> => {
      log(`retries: ${run}`);
      const answeredAt = new Map<string, number>();
      const endpoint = createServer((req, res) => {
        let body = '';
        req.on('data', (d: Buffer) => {
          body += d.toString();
        });
        req.on('end', () => {
          const { name } = JSON.parse(
            Buffer.from(JSON.parse(body).message.data, 'base64').toString('utf8'),
          ) as { name: string };
          setTimeout(() => {
            if (name !== 'failing') answeredAt.set(name, performance.now());
            res.writeHead(name === 'failing' && run === 'before' ? 500 : 204).end();
          }, ANSWER_MS);
        });
      });
      const target = await listen(endpoint);
      const id = `bench-retries-${run}-${Date.now()}`;
      await pubsub.createTopic(`${id}-dead-letter`);
      const proxy = await startPushProxy({
        target,
        emulatorHost: env.emulator.host,
        projectId,
        deadLetterTopic: `projects/${projectId}/topics/${id}-dead-letter`,
        subscription: `projects/${projectId}/subscriptions/${id}`,
        pushBackoff: true,
      });
      const publisher = await env.publisherOnNewTopic(id);
      const unordered = createKeyPublisher({
        projectId,
        topic: id,
        emulatorHost: env.emulator.host,
        logger: quiet,
        ordering: false,
        batching: { maxMessages: 1, maxMilliseconds: 0 },
      });
      const [subscription] = await pubsub.topic(id).createSubscription(id, {
        pushConfig: { pushEndpoint: proxy.url },
        enableMessageOrdering: true,
        // Terraform's retry policy (10 → 600 s): the failing messages' own redeliveries are rare.
        retryPolicy: { minimumBackoff: { seconds: 10 }, maximumBackoff: { seconds: 600 } },
      });
      // Without ordering key, the failing key's messages are not held behind each other: it fails 5×/s.
      const publish = (name: string) =>
        (name === 'failing' ? unordered : publisher).publish(keyMessage('bench-retries', 'ns', name));
      let failing: NodeJS.Timeout | undefined;
      const publishedAt = new Map<string, number>();
      try {
        if (run !== 'idle') {
          failing = setInterval(() => void publish('failing').catch(() => {}), 1000 / FAILURES_PER_S);
          await sleep(tiny ? 500 : 2000); // the failures under way before the first measured key
        }
        for (let i = 0; i < sizes.retryOtherKeys; i++) {
          const name = `other-${i}`;
          publishedAt.set(name, performance.now());
          await publish(name);
          await sleep(OTHER_EVERY_MS * (0.5 + Math.random()));
        }
        clearInterval(failing);
        await waitFor(() => answeredAt.size >= sizes.retryOtherKeys, {
          timeoutMs: waitMs,
          message: 'every other key answered',
        }).catch(() => {}); // the keys still unanswered count with what they waited so far
      } finally {
        clearInterval(failing);
      }
      const end = performance.now();
      await subscription.delete().catch(() => {});
      await proxy.stop();
      await publisher.close();
      await unordered.close();
      await new Promise((resolve) => endpoint.close(resolve));
      return {
        latencies: [...publishedAt].map(([name, t0]) => (answeredAt.get(name) ?? end) - t0),
        unanswered: sizes.retryOtherKeys - answeredAt.size,
      };
    };
    // `after` right after `idle`: `before` leaves the emulator busy with its failing messages' redeliveries.
    const runs = {
      idle: await measure('idle'),
      after: await measure('after'),
      before: await measure('before'),
    };
    const [idle, before, after] = [runs.idle, runs.before, runs.after].map(
      (r) => quantiles(r.latencies).p50,
    ) as [number, number, number];
    const censored = (run: Run) =>
      runs[run].unanswered
        ? `; ${runs[run].unanswered} not answered within ${waitMs / 1000} s, counted at that time (a lower bound)`
        : '';
    const what = (answer: string, run: Run) =>
      `other keys' publish → answered, p50, while one key fails ${FAILURES_PER_S}×/s answered ${answer} (push backoff modelled, n=${sizes.retryOtherKeys}${censored(run)}${censored('idle')})`;
    const figure = figuresOf('retries');
    const vsIdle = { name: 'the same, no failing key (idle)', value: idle };
    return {
      figures: [
        figure(what('500 (before)', 'before'), before, 'ms', vsIdle),
        figure(what('204 + requeue (after)', 'after'), after, 'ms', vsIdle, {
          text: '≤ 1.2× idle',
          met: after <= 1.2 * idle,
        }),
      ],
    };
  },
};
