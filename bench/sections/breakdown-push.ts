/**
 * The breakdown section's push path alone: the local push proxy's own hop, and the emulator's push
 * delivery against an endpoint answering after a reconcile's time (the breakdown's report text).
 */
import { createServer } from 'node:http';
import { startPushProxy } from '../../local/push-proxy.ts';
import { FUNCTION_CONCURRENCY } from '../../local/stack-services.ts';
import { waitFor } from '../../test/support/wait.ts';
import type { SectionEnv } from '../environment.ts';
import { type Figure, figuresOf, quantiles } from '../report.ts';
import { listen, sleep } from '../support.ts';

/** The endpoint's answer time in the emulator measurement, ms (a reconcile's). */
const ANSWER_MS = 20;

const figure = figuresOf('breakdown');

export async function pushFigures(env: SectionEnv): Promise<Figure[]> {
  const hop = await proxyHop(env);
  return [hop.figure, ...(await emulatorPush(env, hop.direct))];
}

/** A push to the proxy in front of a server that answers 204 at once, vs to that server (ms each). */
async function proxyHop(env: SectionEnv): Promise<{ direct: number; figure: Figure }> {
  const { emulator } = await env.emulator();
  const answer = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  const direct = await listen(answer);
  const proxy = await startPushProxy({
    target: direct,
    emulatorHost: emulator.host,
    projectId: emulator.projectId,
    deadLetterTopic: `projects/${emulator.projectId}/topics/bench-breakdown-dead-letters`,
    subscription: `projects/${emulator.projectId}/subscriptions/bench-breakdown`,
  });
  const push = async (url: string, i: number) => {
    const t0 = performance.now();
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        message: { data: Buffer.from('{}').toString('base64'), messageId: String(i), attributes: {} },
        subscription: 'bench-breakdown',
      }),
    });
    await res.arrayBuffer();
    return performance.now() - t0;
  };
  const hops = { proxy: [] as number[], direct: [] as number[] };
  try {
    for (let i = 0; i < env.sizes.pushes; i++) {
      hops.proxy.push(await push(proxy.url, i));
      hops.direct.push(await push(direct, i));
    }
  } finally {
    await proxy.stop();
    await new Promise((resolve) => answer.close(resolve));
  }
  const directMs = quantiles(hops.direct).p50;
  return {
    direct: directMs,
    figure: figure(
      `a push through the local push proxy (emulator → proxy → function), median of ${env.sizes.pushes}`,
      quantiles(hops.proxy).p50,
      'ms',
      { name: 'the same push straight to the server', value: directMs },
    ),
  };
}

/** The emulator's push subscription against an endpoint answering in {@link ANSWER_MS}; `directMs`: the HTTP hop alone. */
async function emulatorPush(env: SectionEnv, directMs: number): Promise<Figure[]> {
  const { sizes } = env;
  const { pubsub } = await env.emulator();
  let inFlight = 0;
  let maxInFlight = 0;
  const pushedAt = new Map<string, number>();
  const slow = createServer((req, res) => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    let body = '';
    req.on('data', (d: Buffer) => {
      body += d.toString();
    });
    req.on('end', () => {
      const id = Buffer.from(JSON.parse(body).message.data, 'base64').toString();
      pushedAt.set(id, performance.now());
      setTimeout(() => {
        inFlight--;
        res.writeHead(204).end();
      }, ANSWER_MS);
    });
  });
  const pushEndpoint = await listen(slow);
  const pushTopic = `bench-emulator-push-${Date.now()}`;
  const [topic] = await pubsub.createTopic(pushTopic);
  const [subscription] = await topic.createSubscription(pushTopic, { pushConfig: { pushEndpoint } });
  const unbatched = pubsub.topic(pushTopic, { batching: { maxMessages: 1 } });
  try {
    const b0 = performance.now();
    await Promise.all(
      Array.from({ length: sizes.pushBacklog }, (_, i) =>
        unbatched.publishMessage({ data: Buffer.from(`b${i}`) }),
      ),
    );
    await waitFor(() => pushedAt.size >= sizes.pushBacklog, {
      timeoutMs: 120_000,
      message: 'the backlog pushed',
    });
    const backlogPerSecond = sizes.pushBacklog / ((Math.max(...pushedAt.values()) - b0) / 1000);
    const waits: number[] = [];
    for (let i = 0; i < sizes.isolatedPushes; i++) {
      await sleep(Math.random() * 200); // isolated: at any phase of the push loops
      const id = `i${i}`;
      const t0 = performance.now();
      await unbatched.publishMessage({ data: Buffer.from(id) });
      await waitFor(() => pushedAt.has(id), {
        timeoutMs: 60_000,
        intervalMs: 5,
        message: 'an isolated message pushed',
      });
      waits.push((pushedAt.get(id) as number) - t0);
    }
    const what = `Pub/Sub emulator push subscription`;
    const answering = `endpoint answering in ${ANSWER_MS} ms`;
    return [
      figure(
        `${what}: pushes in flight at once while ${sizes.pushBacklog} messages wait (${answering})`,
        maxInFlight,
        'pushes',
        {
          name: "the function's request slots (one Cloud Run instance's concurrency)",
          value: FUNCTION_CONCURRENCY,
        },
      ),
      figure(`${what}: backlog pushed per second (${answering})`, backlogPerSecond, 'msgs/s', {
        name: `${FUNCTION_CONCURRENCY} slots busy for ${ANSWER_MS} ms each`,
        value: (FUNCTION_CONCURRENCY * 1000) / ANSWER_MS,
      }),
      figure(
        `${what}: isolated message, publish accepted → pushed, median (n=${waits.length})`,
        quantiles(waits).p50,
        'ms',
        { name: 'a push straight to the server (the HTTP hop alone)', value: directMs },
      ),
    ];
  } finally {
    await subscription.delete().catch(() => {});
    await topic.delete().catch(() => {});
    await new Promise((resolve) => slow.close(resolve));
  }
}
