// `levelset dev`'s pretty view (local/progress.ts), fed the lines the real logger and the real
// reconcileKey write: a controller's own log lines show under its key's outcome line, filtered by level.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import type { pino } from 'pino';
import { formatRecord, localRecord } from '../../cli/impl/logs.ts';
import type { Controller } from '../../core/contract/controller.ts';
import { createLogger, keyLogger } from '../../core/log.ts';
import { reconcileKey } from '../../functions/runtime/reconcile.ts';
import { createPrettyLog } from '../../local/progress.ts';
import type { LogLine } from '../../local/service.ts';

/** The JSON lines one delivery of a controller that logs at info and debug writes at `LOG_LEVEL` `level`. */
async function deliveryLines(level: pino.Level, notFound = false): Promise<LogLine[]> {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split('\n')) if (text) lines.push(JSON.parse(text) as LogLine);
      done();
    },
  });
  const previous = process.env.LOG_LEVEL;
  process.env.LOG_LEVEL = level;
  const root = createLogger('functions', sink);
  if (previous === undefined) delete process.env.LOG_LEVEL;
  else process.env.LOG_LEVEL = previous;
  const controller = {
    name: 'widget',
    primary: { group: 'example.com', version: 'v1', plural: 'widgets', kind: 'Widget', namespaced: true },
    watches: [],
    rbac: [],
    async reconcile(_key, ctx) {
      ctx.log.info({ replicas: 3, image: 'nginx:1.27' }, 'scaled the widget');
      ctx.log.debug('read 2 children');
      return notFound ? { notFound: true } : {};
    },
  } satisfies Controller;
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server: 'http://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'c', cluster: 'c', user: 'u' }],
    currentContext: 'c',
  });
  const log = keyLogger(root, {
    cluster: 'default',
    controller: 'widget',
    namespace: 'demo',
    name: 'w1',
  }).child({ messageId: '7', reason: 'watch' });
  const { outcome } = await reconcileKey(
    new Map([['widget', controller]]),
    'widget',
    { namespace: 'demo', name: 'w1' },
    { kubeConfig: () => kubeConfig, log, retriedBy: 'Pub/Sub' },
  );
  assert.equal(outcome, 'success');
  return lines;
}

const view = (lines: LogLine[], level?: pino.Level) => {
  const pretty = createPrettyLog(level ? { level } : {});
  return lines.flatMap((l) => pretty.lines('reconcile', l));
};

describe("levelset dev's pretty view", () => {
  it("shows a controller's info line, with its fields, under the key's outcome line", async () => {
    const shown = view(await deliveryLines('info'));
    assert.equal(shown.length, 2, shown.join('\n'));
    assert.match(shown[0] ?? '', /^reconcile {3}✓ widget demo\/w1 success \(\d+ ms\)$/);
    assert.equal(shown[1], '              scaled the widget  replicas=3 image=nginx:1.27');
  });

  it('--log-level debug shows debug lines too; --log-level warn hides the info line', async () => {
    const debug = view(await deliveryLines('debug'), 'debug');
    assert.deepEqual(debug.slice(1), [
      '              scaled the widget  replicas=3 image=nginx:1.27',
      '              DEBUG read 2 children',
    ]);
    const warn = view(await deliveryLines('info'), 'warn');
    assert.equal(warn.length, 1, warn.join('\n'));
    assert.match(warn[0] ?? '', /widget demo\/w1 success/);
  });

  it("levelset logs prints a controller's own fields as the live view does", async () => {
    const lines = await deliveryLines('info');
    const own = lines.find((l) => l.message === 'scaled the widget');
    assert.ok(own, 'the controller line');
    const record = localRecord('reconcile', JSON.stringify(own));
    assert.ok(record);
    assert.match(
      formatRecord(record),
      / widget demo\/w1 scaled the widget reason=watch replicas=3 image=nginx:1\.27$/,
    );
    const outcome = lines.find((l) => l.outcome === 'success');
    const done = localRecord('reconcile', JSON.stringify(outcome));
    assert.ok(done);
    assert.doesNotMatch(formatRecord(done), /replicas=|messageId=/, "a delivery's own fields only");
  });

  it('says when the key named no object', async () => {
    const shown = view(await deliveryLines('info', true));
    assert.match(shown[0] ?? '', /widget demo\/w1 success \(\d+ ms\) — not found: nothing to do$/);
  });

  it('holds nothing back for ever: warnings at once, a key that never ends is printed after 50 lines', () => {
    const pretty = createPrettyLog();
    const labels = { 'logging.googleapis.com/labels': { controller: 'widget', key: 'demo/w2' } };
    assert.deepEqual(
      pretty.lines('reconcile', { severity: 'WARNING', level: 40, message: 'slow API', ...labels }),
      ['reconcile   WARNING widget demo/w2: slow API'],
    );
    const printed: string[] = [];
    for (let i = 0; i < 51; i++)
      printed.push(
        ...pretty.lines('reconcile', { severity: 'INFO', level: 30, message: `step ${i}`, ...labels }),
      );
    assert.equal(printed[0], 'reconcile   widget demo/w2:');
    assert.equal(printed.length, 52);
  });
});
