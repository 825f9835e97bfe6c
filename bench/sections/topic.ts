/**
 * Section `topic`: the Topic controller (functions/controllers/topic): the requests of a no-op
 * reconcile, to Kubernetes and to Pub/Sub, then the time from a Topic's delete to the object gone
 * through the serverless pipeline, each beside a Foo's.
 */

import type { Controller } from '../../core/contract/controller.ts';
import { controllers as registry } from '../../examples/registry.ts';
import { reconcilerForTest } from '../../functions/kit/testing.ts';
import { startGrpcProxy } from '../../local/grpc-proxy.ts';
import type { ApiServer, Section, SectionEnv } from '../environment.ts';
import { type Figure, figuresOf, quantiles } from '../report.ts';
import {
  applyCrds,
  FOOS,
  isReady,
  now,
  type ObjectWatch,
  quiet,
  waitForServed,
  watchObjects,
} from '../support.ts';

const figure = figuresOf('topic');
const TOPICS = { group: 'pubsub.levelset.dev', version: 'v1alpha1', plural: 'topics' } as const;

const createTopicObject = (api: ApiServer, namespace: string, name: string, spec: object) =>
  api.custom.createNamespacedCustomObject({
    ...TOPICS,
    namespace,
    body: { apiVersion: 'pubsub.levelset.dev/v1alpha1', kind: 'Topic', metadata: { name }, spec },
  });

export const topicCosts: Section = {
  name: 'topic',
  async run(env) {
    const api = await env.apiServer();
    await applyCrds(api.kubeconfigPath, ['topic']);
    const figures = await noOpCosts(env, api);
    figures.push(...(await deletes(env, api)));
    return { figures };
  },
};

async function noOpCosts(env: SectionEnv, api: ApiServer): Promise<Figure[]> {
  const { emulator } = await env.emulator();
  const counter = await startGrpcProxy(emulator.host);
  // The controller's Pub/Sub client is made at its first use in this process: through the counter.
  const emulatorHost = process.env.PUBSUB_EMULATOR_HOST;
  process.env.PUBSUB_EMULATOR_HOST = counter.host;
  try {
    const ns = 'bench-cost-topic';
    await api.createNs(ns);
    await waitForServed(() => api.custom.listNamespacedCustomObject({ ...TOPICS, namespace: ns }));
    const noOp = async (controller: Controller, name: string) => {
      const reconciler = reconcilerForTest(controller, api.kubeconfigPath, { log: quiet });
      await reconciler.reconcile({ namespace: ns, name }); // finalizer, create
      await reconciler.reconcile({ namespace: ns, name }); // status settles
      counter.counts.clear();
      const { requests } = await reconciler.reconcile({ namespace: ns, name });
      return { kubernetes: requests.length, pubsub: counter.total() };
    };
    await createTopicObject(api, ns, 'bare', {});
    await createTopicObject(api, ns, 'with-sub', {
      subscriptions: [{ id: 'bench-with-sub', ackDeadlineSeconds: 20 }],
    });
    await api.createFoo(ns, 'cost');
    const topicController = registry.find((c) => c.name === 'topic') as Controller;
    const bare = await noOp(topicController, 'bare');
    const withSub = await noOp(topicController, 'with-sub');
    const fooCost = await noOp(registry.find((c) => c.name === 'foo') as Controller, 'cost');
    return [
      figure('Topic, no-op reconcile: requests to Kubernetes', withSub.kubernetes, 'requests', {
        name: 'Foo, no-op reconcile',
        value: fooCost.kubernetes,
      }),
      figure('Topic with 1 subscription, no-op reconcile: requests to Pub/Sub', withSub.pubsub, 'requests', {
        name: 'Topic without subscription',
        value: bare.pubsub,
      }),
    ];
  } finally {
    await counter.close();
    if (emulatorHost === undefined) delete process.env.PUBSUB_EMULATOR_HOST;
    else process.env.PUBSUB_EMULATOR_HOST = emulatorHost;
  }
}

/** Delete → gone through the serverless pipeline (the stack's own emulator), Topics and Foos in turn. */
async function deletes(env: SectionEnv, api: ApiServer): Promise<Figure[]> {
  const ns = 'bench-topic-delete';
  await api.createNs(ns);
  // It never resyncs: no idle resync function beside what is measured.
  const stack = await env.startLocalStack({
    mode: 'serverless',
    kubeconfigPath: api.kubeconfigPath,
    env: {},
    resyncOnDemand: true,
  });
  const topicWatch = watchObjects(api.kc, '/apis/pubsub.levelset.dev/v1alpha1/topics');
  const fooWatch = watchObjects(api.kc, '/apis/samplecontroller.k8s.io/v1alpha1/foos');
  await Promise.all([topicWatch.ready, fooWatch.ready]);
  try {
    /** Deletes `name` of `resource`: ms until `watch` sees it gone. */
    const deleteToGone = async (resource: typeof TOPICS | typeof FOOS, watch: ObjectWatch, name: string) => {
      const started = now();
      await api.custom.deleteNamespacedCustomObject({ ...resource, namespace: ns, name });
      return (await watch.until(() => !watch.get(ns, name))) - started;
    };
    const topicGone: number[] = [];
    const fooGone: number[] = [];
    for (let i = 0; i < env.sizes.topics; i++) {
      await createTopicObject(api, ns, `t-${i}`, { subscriptions: [{ id: `bench-delete-${i}` }] });
      await topicWatch.until(() => isReady(topicWatch.get(ns, `t-${i}`)));
      topicGone.push(await deleteToGone(TOPICS, topicWatch, `t-${i}`));
      await api.createFoo(ns, `f-${i}`);
      await fooWatch.until(() => Boolean(fooWatch.get(ns, `f-${i}`)));
      fooGone.push(await deleteToGone(FOOS, fooWatch, `f-${i}`));
    }
    const t = quantiles(topicGone);
    const f = quantiles(fooGone);
    return [
      figure(
        `Topic delete → object gone (finalize through the serverless pipeline), p50 of ${t.n}`,
        Math.round(t.p50),
        'ms',
        { name: 'Foo delete → gone (no finalizer), p50', value: Math.round(f.p50) },
      ),
      figure(`Topic delete → object gone, p95 of ${t.n}`, Math.round(t.p95), 'ms', {
        name: 'Foo delete → gone (no finalizer), p95',
        value: Math.round(f.p95),
      }),
    ];
  } finally {
    topicWatch.stop();
    fooWatch.stop();
    await stack.stop();
  }
}
