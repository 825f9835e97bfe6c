// The relay's informer planning and key pipeline for controllers the kit defines (and a map naming
// another cluster): the lookup that feeds MapContext.get, a watch predicate that throws, and a key
// published for another cluster. Which keys a kit controller's watches produce is the kit's own
// test (test/unit/kit.test.ts, through the kit's `keysFor`).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject } from '@kubernetes/client-node';
import * as z from 'zod';
import type { WatchEvent } from '../../core/contract/controller.ts';
import type { Key } from '../../core/contract/key.ts';
import { createLogger } from '../../core/log.ts';
import { encodeKeyMessage, type KeyMessage, keyMessageSchema } from '../../core/message.ts';
import { SECRETS } from '../../functions/controllers/secret-replicator/index.ts';
import { defineController, deployments, pods, replicasets } from '../../functions/kit/index.ts';
import { KeyPipeline, planInformers } from '../../relay/pipeline.ts';
import { ManualTimers } from '../support/manual-timers.ts';
import { event, object, ref, widgets } from '../support/owner-chain.ts';

describe("the relay's caches feed a kit controller's mapThroughControllers", () => {
  const deployment = object('d', 'uid-d', ref('test.levelset.dev/v1', 'Widget', 'w', 'uid-w'));
  const rs = object('rs', 'uid-rs', ref('apps/v1', 'Deployment', 'd', 'uid-d'));
  const pod = object('p', 'uid-p', ref('apps/v1', 'ReplicaSet', 'rs', 'uid-rs'));
  const cache = new Map<string, KubernetesObject>([
    ['Deployment/ns/d', deployment],
    ['ReplicaSet/ns/rs', rs],
  ]);

  it('KeyPipeline passes MapContext.get through to its lookup, naming the controller', () => {
    const controller = defineController({
      name: 'widget',
      primary: widgets,
      spec: z.object({}),
      owns: [deployments],
      watches: [replicasets, pods],
      reconcile: () => ({}),
    });
    const asked: string[] = [];
    const pipeline = new KeyPipeline({
      collapseMs: 0,
      logger: createLogger('relay', { write: () => {} }),
      primaryKeys: () => [],
      lookup: (name, r, k: Key) => {
        asked.push(`${name}:${r.kind}/${k.name}`);
        return cache.get(`${r.kind}/${k.namespace}/${k.name}`);
      },
      publish: async () => '1',
    });
    const route = planInformers([controller]).find((p) => p.resource === pods)?.routes[0];
    assert.ok(route, 'a route for the pods watch');
    assert.deepEqual(pipeline.keysFor(route, event(pod)), [{ namespace: 'ns', name: 'w' }]);
    assert.deepEqual(asked, ['widget:ReplicaSet/rs', 'widget:Deployment/d']);
  });
});

describe("the relay and a kit controller's watch predicate", () => {
  const pod = (phase: string) => ({ metadata: { name: 'p', namespace: 'ns' }, status: { phase } });

  it('a predicate that throws drops the event with an error line', () => {
    const throwing = defineController({
      name: 'widget',
      primary: widgets,
      spec: z.object({}),
      watches: [
        {
          resource: pods,
          predicate: () => {
            throw new Error('boom');
          },
        },
      ],
      reconcile: () => ({}),
    });
    const r = planInformers([throwing]).find((p) => p.resource === pods)?.routes[0];
    assert.ok(r);
    const lines: string[] = [];
    const pipeline = new KeyPipeline({
      collapseMs: 0,
      logger: createLogger('relay', { write: (l: string) => void lines.push(l) }),
      primaryKeys: () => [],
      publish: async () => '1',
    });
    assert.deepEqual(pipeline.keysFor(r, event(pod('Running'))), []);
    assert.match(lines.join(''), /watch predicate threw: event dropped/);
  });
});

describe('the relay publishes a key a map named for another cluster', () => {
  const controller = {
    name: 'replica',
    primary: SECRETS,
    rbac: [],
    watches: [
      {
        resource: SECRETS,
        map: (e: WatchEvent) => [
          { namespace: 'shared', name: e.object.metadata?.name ?? '', cluster: 'cluster-a' },
          { namespace: 'shared', name: 'mine', cluster: 'cluster-b' },
          { namespace: 'shared', name: 'bad', cluster: 'Not A Cluster' },
        ],
      },
    ],
    reconcile: async () => undefined,
  };

  it('v2 message naming that cluster; its own cluster stays v2 of its own; an invalid cluster is dropped, logged', async () => {
    const timers = new ManualTimers(Date.parse('2026-11-25T10:00:00.000Z'));
    const published: KeyMessage[] = [];
    const logs: { message: string }[] = [];
    const pipeline = new KeyPipeline({
      cluster: 'cluster-b',
      collapseMs: 250,
      timers,
      logger: createLogger('relay', { write: (s: string) => void logs.push(JSON.parse(s)) }),
      primaryKeys: () => [],
      publish: async (m) => {
        published.push(m);
        return String(published.length);
      },
    });
    const [plan] = planInformers([controller]);
    const object = { apiVersion: 'v1', kind: 'Secret', metadata: { namespace: 'team', name: 'db' } };
    pipeline.handle(plan?.routes ?? [], { type: 'MODIFIED', object });
    await pipeline.flush();
    const messages = published.map((m) => keyMessageSchema.parse(m));
    assert.deepEqual(messages.map((m) => [m.v, 'cluster' in m ? m.cluster : 'default', m.name]).sort(), [
      [2, 'cluster-a', 'db'],
      [2, 'cluster-b', 'mine'],
    ]);
    assert.ok(logs.some((l) => l.message === 'watch map returned an invalid key'));
    // Pub/Sub orders it as that cluster's key, and its attributes name that cluster.
    const encoded = published
      .map((m) => encodeKeyMessage(m))
      .find((e) => e.attributes.cluster === 'cluster-a');
    assert.equal(encoded?.orderingKey, 'cluster-a/replica/shared/db');
  });
});
