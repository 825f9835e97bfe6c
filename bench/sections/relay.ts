/** Section `relay`: events/s through the key pipeline (no I/O), keys/s published to the emulator. */
import type { Controller } from '../../core/contract/controller.ts';
import { configmaps, pods } from '../../functions/kit/resources.ts';
import { createRelayMetrics } from '../../relay/metrics.ts';
import { KeyPipeline, planInformers } from '../../relay/pipeline.ts';
import type { Section } from '../environment.ts';
import { figuresOf } from '../report.ts';
import { keyMessage, pool, quiet } from '../support.ts';

/** Distinct keys the synthetic events map to. */
const KEYS = 10_000;

export const relayThroughput: Section = {
  name: 'relay',
  async run({ sizes, emulator }) {
    const controller: Controller = {
      name: 'bench-relay',
      primary: configmaps,
      rbac: [],
      watches: [
        {
          resource: pods,
          map: (e) => [
            { namespace: e.object.metadata?.namespace ?? '', name: e.object.metadata?.labels?.app ?? '' },
          ],
        },
      ],
      reconcile: async () => undefined,
    };
    const routes = planInformers([controller])[0]?.routes ?? [];
    let published = 0;
    const pipeline = new KeyPipeline({
      collapseMs: sizes.collapseMs,
      publish: async () => String(++published),
      primaryKeys: () => [],
      logger: quiet,
      metrics: createRelayMetrics(),
    });
    const events = Array.from({ length: 1000 }, (_, i) => ({
      type: 'MODIFIED' as const,
      object: { metadata: { namespace: 'ns', name: `p${i}`, labels: { app: `a${i % KEYS}` } } },
    }));
    const t0 = performance.now();
    for (let i = 0; i < sizes.pipelineEvents; i++) {
      const e = events[i % events.length] as (typeof events)[number];
      e.object.metadata.labels.app = `a${i % KEYS}`;
      pipeline.handle(routes, e);
    }
    const eventsPerS = sizes.pipelineEvents / ((performance.now() - t0) / 1000);
    pipeline.discard();
    const publisher = await (await emulator()).publisherOnNewTopic('bench-relay-publish');
    const p0 = performance.now();
    await pool(
      Array.from({ length: sizes.publishKeys }, (_, i) => i),
      1000,
      (i) => publisher.publish(keyMessage('bench-relay', 'ns', `k${i}`)),
    );
    const keysPerS = sizes.publishKeys / ((performance.now() - p0) / 1000);
    await publisher.close();
    const figure = figuresOf('relay');
    return {
      figures: [
        figure(
          `events/s ingested (map + collapse, ${sizes.pipelineEvents} events over ${KEYS} keys, one thread)`,
          eventsPerS,
          'events/s',
        ),
        figure(
          `keys/s published to the Pub/Sub emulator (${sizes.publishKeys} distinct keys, ordering keys on)`,
          keysPerS,
          'keys/s',
        ),
      ],
    };
  },
};
