/**
 * Section `collapse`: the relay alone against the API server and the emulator, its isolated-change
 * latency and its bursts, leading + trailing edge vs trailing only.
 */
import type { Controller } from '../../core/contract/controller.ts';
import type { KeyMessage } from '../../core/message.ts';
import { PooledKubeConfig } from '../../core/pooled-kubeconfig.ts';
import { configmaps } from '../../functions/kit/resources.ts';
import type { CollapseMode } from '../../relay/collapse.ts';
import { startRelay } from '../../relay/relay.ts';
import type { ApiServer, Emulator, Section, SectionEnv } from '../environment.ts';
import { comparing, quantiles } from '../report.ts';
import { merge, now, pool, quiet, sleep } from '../support.ts';

interface ModeResult {
  isolated: number[];
  burst: { messages: number; spanMs: number };
  objects: { maxPerObjectPerWindow: number; messages: number; spanMs: number };
}

export const collapse: Section = {
  name: 'collapse',
  async run(env) {
    const api = await env.apiServer();
    const bus = await env.emulator();
    const out = {} as Record<CollapseMode, ModeResult>;
    for (const mode of ['leading-trailing', 'trailing'] as const)
      out[mode] = await runMode(env, api, bus, mode);
    return collapseFigures(env, out);
  },
};

/** A relay of one collapse mode watching ConfigMaps of a namespace of its own; what it published when. */
async function runMode(
  env: SectionEnv,
  api: ApiServer,
  bus: Emulator,
  mode: CollapseMode,
): Promise<ModeResult> {
  const { sizes } = env;
  env.log(`collapse: ${mode}`);
  const ns = `bench-collapse-${mode}`;
  await api.createNs(ns);
  const publisher = await bus.publisherOnNewTopic(`bench-collapse-${mode}`);
  const accepted: { name: string; at: number }[] = [];
  const controller: Controller = {
    name: 'bench-collapse',
    primary: configmaps,
    rbac: [],
    watches: [
      {
        resource: configmaps,
        namespace: ns,
        map: (e) => [{ namespace: ns, name: e.object.metadata?.name ?? '' }],
      },
    ],
    reconcile: async () => undefined,
  };
  const relayKc = new PooledKubeConfig(); // as the relay process loads it (core/kube.ts)
  relayKc.loadFromFile(api.kubeconfigPath);
  const relay = await startRelay({
    kubeConfig: relayKc,
    controllers: [controller],
    collapseMs: sizes.collapseMs,
    collapseMode: mode,
    logger: quiet,
    port: 0,
    host: '127.0.0.1',
    publisher: {
      publish: async (msg: KeyMessage) => {
        const id = await publisher.publish(msg);
        accepted.push({ name: msg.name, at: now() });
        return id;
      },
      flush: () => publisher.flush(),
    },
  });
  try {
    await relay.whenReady();
    const count = (name: string) => accepted.filter((a) => a.name === name).length;
    const waitCount = async (name: string, n: number) => {
      while (count(name) < n) await sleep(1);
      return accepted.filter((a) => a.name === name)[n - 1]?.at as number;
    };
    const settle = () => sleep(sizes.collapseMs * 3);
    const isolated: number[] = [];
    for (let i = 0; i < sizes.isolated; i++) {
      const name = `iso-${i}`;
      const t0 = now();
      await api.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } });
      isolated.push((await waitCount(name, 1)) - t0);
    }
    await settle();
    // One object, `burst` updates within ~1 s.
    await api.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'hot' } } });
    await waitCount('hot', 1);
    await settle();
    const hotBefore = count('hot');
    const b0 = now();
    const batch = Math.max(1, Math.ceil(sizes.burst / 20));
    for (let i = 0; i < sizes.burst; i += batch) {
      await Promise.all(
        Array.from({ length: Math.min(batch, sizes.burst - i) }, (_, k) =>
          api.core.patchNamespacedConfigMap(
            { namespace: ns, name: 'hot', body: { data: { n: String(i + k) } } },
            merge,
          ),
        ),
      );
      const due = b0 + ((i + batch) / sizes.burst) * 1000;
      if (due > now()) await sleep(due - now());
    }
    const spanMs = now() - b0;
    await settle();
    const burst = { messages: count('hot') - hotBefore, spanMs };
    // `objects` objects × `objectUpdates` updates each, interleaved.
    const objs = Array.from({ length: sizes.objects }, (_, i) => `obj-${i}`);
    await pool(objs, 20, (name) =>
      api.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name } } }),
    );
    await settle();
    const before = new Map(objs.map((o) => [o, count(o)]));
    const o0 = now();
    for (let u = 0; u < sizes.objectUpdates; u++)
      await pool(objs, 10, (name) =>
        api.core.patchNamespacedConfigMap({ namespace: ns, name, body: { data: { u: String(u) } } }, merge),
      );
    const oSpan = now() - o0;
    await settle();
    const windows = Math.max(1, Math.ceil(oSpan / sizes.collapseMs));
    const perObject = objs.map((o) => count(o) - (before.get(o) ?? 0));
    return {
      isolated,
      burst,
      objects: {
        maxPerObjectPerWindow: Math.max(...perObject) / windows,
        messages: perObject.reduce((a, b) => a + b, 0),
        spanMs: oSpan,
      },
    };
  } finally {
    await relay.stop();
    await publisher.close();
  }
}

function collapseFigures(env: SectionEnv, out: Record<CollapseMode, ModeResult>) {
  const { sizes } = env;
  const lt = out['leading-trailing'];
  const tr = out.trailing;
  const iso = quantiles(lt.isolated);
  const bound = 1 + Math.ceil(1000 / sizes.collapseMs);
  const burstBound = 1 + Math.ceil(lt.burst.spanMs / sizes.collapseMs);
  const figure = comparing('collapse', lt, tr, 'trailing only');
  const updates = `${sizes.objects} objects × ${sizes.objectUpdates} updates`;
  const figures = [
    figure(
      `isolated change → publish accepted, p50 (n=${iso.n}, window ${sizes.collapseMs} ms)`,
      'ms',
      (r) => quantiles(r.isolated).p50,
      { text: '≤ 25 ms', met: iso.p50 <= 25 },
    ),
    figure('isolated change → publish accepted, p95', 'ms', (r) => quantiles(r.isolated).p95),
    figure(
      `${sizes.burst} updates to one object within ${Math.round(lt.burst.spanMs)} ms → messages`,
      'msgs',
      (r) => r.burst.messages,
      {
        text: `≤ 1 + ⌈${Math.round(lt.burst.spanMs)} ms / window⌉ = ${burstBound} (${bound} for 1 s)`,
        met: lt.burst.messages <= burstBound,
      },
    ),
    figure(
      `${updates} (${Math.round(lt.objects.spanMs)} ms) → most messages per object per window`,
      'msgs',
      (r) => r.objects.maxPerObjectPerWindow,
      { text: '≤ 2', met: lt.objects.maxPerObjectPerWindow <= 2 },
    ),
    figure(`${updates} → messages in all`, 'msgs', (r) => r.objects.messages),
  ];
  return {
    figures,
    chart: [
      { name: 'isolated change → publish: leading+trailing', values: lt.isolated },
      { name: 'isolated change → publish: trailing only', values: tr.isolated },
    ],
  };
}
