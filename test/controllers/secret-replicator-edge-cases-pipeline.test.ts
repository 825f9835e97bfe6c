/**
 * The Secret replicator end to end on edge-case input, and a leak check over everything the run
 * produced: a source Secret at Kubernetes' 1 MiB data limit, unicode in annotations, a target
 * namespace of 63 characters, an invalid and a catastrophic `replicate-to` pattern, and key
 * messages that repeat, arrive out of order or arrive for a deleted source. Then no Secret value
 * (plain or base64) may appear in any process's output, Event or resync answer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api, type V1Secret } from '@kubernetes/client-node';
import { LABELS } from '../../core/log.ts';
import {
  REASON_INVALID_REPLICATE_TO,
  REPLICATE_TO_ANNOTATION,
  SOURCE_ANNOTATION,
} from '../../functions/controllers/secret-replicator/plan.ts';
import { uniqueSuffix } from '../../functions/kit/testing.ts';
import {
  leakedSecretValues,
  type Pipeline,
  pushEnvelope,
  serverlessStack,
  startPipeline,
} from '../support/pipeline.ts';
import { waitFor } from '../support/wait.ts';

const run = uniqueSuffix();
const targetsPattern = `e2e-${run}-.*`;
/** Kubernetes' limit on a Secret's data (k8s.io/kubernetes pkg/apis/core/validation MaxSecretSize). */
const MAX_SECRET_BYTES = 1024 * 1024;

describe('secret-replicator edge cases end to end', () => {
  let p: Pipeline;
  let core: CoreV1Api;
  let source: string;
  const targets: string[] = [];
  const namespaces: string[] = [];
  /** Every Secret value this test writes; none may leak. */
  const values: string[] = [];
  const resyncAnswers: string[] = [];

  const value = (label: string) => {
    const v = `v-${label}-${run}-${uniqueSuffix()}`;
    values.push(v);
    return v;
  };
  const makeNamespace = async (name: string) => {
    await core.createNamespace({ body: { metadata: { name, labels: { 'levelset.dev/test': 'true' } } } });
    namespaces.push(name);
    return name;
  };
  const readCopy = (namespace: string, name: string) =>
    core.readNamespacedSecret({ namespace, name }).catch((err: { code?: number }) => {
      if (err.code === 404) return undefined;
      throw err;
    });
  const secret = (
    name: string,
    data: Record<string, string>,
    annotations: Record<string, string> = {},
  ): V1Secret => ({
    metadata: {
      name,
      namespace: source,
      annotations: { [REPLICATE_TO_ANNOTATION]: targetsPattern, ...annotations },
    },
    type: 'Opaque',
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  });
  const copiesEverywhere = (name: string, key: string, expected: string, where = targets) =>
    waitFor(
      async () => {
        const copies = await Promise.all(where.map((ns) => readCopy(ns, name)));
        return copies.every((c) => c && Buffer.from(c.data?.[key] ?? '', 'base64').toString() === expected)
          ? copies
          : undefined;
      },
      { message: `copies of ${name} in ${where.join(', ')}` },
    );
  /** The final line (with `outcome`) of every delivery of `source/<name>`. */
  const deliveries = (name: string) =>
    p.logs.filter(({ service, line }) => {
      const labels = line[LABELS] as { key?: string } | undefined;
      return (
        service === 'reconcile' && labels?.key === `${source}/${name}` && typeof line.outcome === 'string'
      );
    });
  const deliver = async (message: object) => {
    const res = await fetch(serverlessStack(p).reconcile.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(pushEnvelope(message)),
    });
    assert.equal(res.status, 204);
  };
  const keyMessage = (name: string, enqueuedAt = new Date().toISOString()) => ({
    v: 1,
    controller: 'secret-replicator',
    namespace: source,
    name,
    reason: 'manual',
    enqueuedAt,
  });

  before(async () => {
    p = await startPipeline(async (cluster) => {
      core = cluster.kubeConfig.makeApiClient(CoreV1Api);
      source = await makeNamespace(`e2e-${run}-src`);
      targets.push(await makeNamespace(`e2e-${run}-a`));
      // A namespace name of the maximum length, 63 characters (DNS-1123 label).
      const long = `e2e-${run}-`;
      targets.push(await makeNamespace(`${long}${'n'.repeat(63 - long.length)}`));
      return { LEVELSET_SOURCE_NAMESPACE: source };
    });
  });

  after(async () => {
    if (!p) return;
    if (!p.cluster.local)
      for (const ns of namespaces) await core.deleteNamespace({ name: ns }).catch(() => {});
    await p.stop();
  });

  it('replicates into a namespace whose name has 63 characters', async () => {
    assert.equal(targets[1]?.length, 63);
    await core.createNamespacedSecret({ namespace: source, body: secret('plain', { k: value('plain') }) });
    await copiesEverywhere('plain', 'k', values.at(-1) ?? '');
  });

  it('replicates a source Secret at the 1 MiB data limit: the copy (plus our labels and annotations) is accepted', async () => {
    const big = value('big');
    const filler = 'x'.repeat(MAX_SECRET_BYTES - big.length - 1);
    await core.createNamespacedSecret({ namespace: source, body: secret('big', { k: big, f: filler }) });
    const copies = await copiesEverywhere('big', 'k', big);
    for (const c of copies) assert.equal(Buffer.from(c?.data?.f ?? '', 'base64').length, filler.length);
  });

  it('replicates a source with unicode in its annotations and values', async () => {
    const v = value('ünïcødé-日本-✓');
    await core.createNamespacedSecret({
      namespace: source,
      body: secret(
        'unicode',
        { k: v },
        {
          'example.com/note': 'Grüße, 日本語, emoji 🔐, RTL עברית',
          [REPLICATE_TO_ANNOTATION]: `${targetsPattern}, ünïcødé-ns, 日本`,
        },
      ),
    });
    const copies = await copiesEverywhere('unicode', 'k', v);
    for (const c of copies) assert.equal(c?.metadata?.annotations?.[SOURCE_ANNOTATION], `${source}/unicode`);
  });

  it('reports an invalid replicate-to pattern with one Warning Event and one terminal delivery, no retry', async () => {
    await core.createNamespacedSecret({
      namespace: source,
      body: secret('bad-pattern', { k: value('bad-pattern') }, { [REPLICATE_TO_ANNOTATION]: 'team-(' }),
    });
    const event = await waitFor(
      async () =>
        (await core.listNamespacedEvent({ namespace: source })).items.find(
          (e) => e.involvedObject.name === 'bad-pattern' && e.reason === REASON_INVALID_REPLICATE_TO,
        ),
      { message: 'a Warning InvalidReplicateTo Event on the source' },
    );
    assert.equal(event.type, 'Warning');
    // A later Secret's copies appear after the bad one's delivery (same relay, same topic):
    // by then a retried delivery would have shown up again.
    await core.createNamespacedSecret({
      namespace: source,
      body: secret('after-bad', { k: value('after') }),
    });
    await copiesEverywhere('after-bad', 'k', values.at(-1) ?? '');
    assert.deepEqual(
      deliveries('bad-pattern').map(({ line }) => line.outcome),
      ['terminal'],
    );
    for (const ns of targets) assert.equal(await readCopy(ns, 'bad-pattern'), undefined);
  });

  it('survives a catastrophic replicate-to pattern against an adversarial namespace name', async () => {
    // `(a+)+b` against 50 a's and a non-b: a backtracking engine would never return.
    await makeNamespace(`${'a'.repeat(50)}-${run}`);
    const v = value('redos');
    await core.createNamespacedSecret({
      namespace: source,
      body: secret('redos', { k: v }, { [REPLICATE_TO_ANNOTATION]: `(a+)+b, ${targetsPattern}` }),
    });
    await copiesEverywhere('redos', 'k', v);
    const outcomes = await waitFor(() => deliveries('redos').length > 0 && deliveries('redos'), {
      message: 'the delivery of redos finished',
    });
    assert.ok(
      outcomes.every(({ line }) => line.outcome === 'success'),
      JSON.stringify(outcomes),
    );
  });

  it('reaches the same state whatever the order and repetition of key messages, and for a deleted source', async () => {
    const v = value('order');
    await core.createNamespacedSecret({ namespace: source, body: secret('order', { k: v }) });
    await copiesEverywhere('order', 'k', v);
    // Repeats, and an old message after a newer one: the reconcile reads the current state each time.
    const old = new Date(Date.now() - 3_600_000).toISOString();
    for (const m of [keyMessage('order'), keyMessage('order'), keyMessage('order', old)]) await deliver(m);
    await copiesEverywhere('order', 'k', v);
    await core.deleteNamespacedSecret({ namespace: source, name: 'order' });
    await waitFor(
      async () => (await Promise.all(targets.map((ns) => readCopy(ns, 'order')))).every((c) => !c),
      {
        message: 'copies of the deleted source pruned',
      },
    );
    // Messages for the deleted source, repeated and stale: nothing comes back, nothing fails.
    const before = deliveries('order').length;
    for (const m of [keyMessage('order', old), keyMessage('order'), keyMessage('order')]) await deliver(m);
    await waitFor(() => deliveries('order').length >= before + 3, { message: 'the three deliveries' });
    // (The relay's own delivery of the deletion may land among them.)
    assert.deepEqual(
      deliveries('order')
        .slice(before)
        .map(({ line }) => line.outcome)
        .filter((o) => o !== 'success'),
      [],
    );
    for (const ns of targets) assert.equal(await readCopy(ns, 'order'), undefined);
  });

  it('never shows Secret data in any log line, Event or resync answer (plain or base64)', async () => {
    resyncAnswers.push(JSON.stringify(await serverlessStack(p).runResync()));
    const events = await Promise.all(namespaces.map((namespace) => core.listNamespacedEvent({ namespace })));
    const haystacks = [
      ...p.logs.map(({ line }) => JSON.stringify(line)),
      ...events.flatMap((list) => list.items.map((e) => JSON.stringify(e))),
      ...resyncAnswers,
    ];
    assert.ok(p.logs.length > 0 && events.some((l) => l.items.length > 0), 'logs and Events were captured');
    assert.deepEqual(leakedSecretValues(haystacks, values), []);
  });
});
