// The relay process (relay/main.ts, run as `levelset relay` runs it, with this repository's registry): bad configuration exits 1 with a clear error; SIGTERM after
// start-up stops the informers, flushes and exits 0.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { PubSub } from '@google-cloud/pubsub';
import { emulatorClientOptions } from '../../functions/publish.ts';
import { freePort, type PubSubEmulator, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import { startTestCluster, type TestCluster, uniqueSuffix } from '../support/cluster.ts';
import { startAll } from '../support/start.ts';
import { waitFor } from '../support/wait.ts';

const cliPath = new URL('../../cli/levelset.ts', import.meta.url).pathname;

interface Run {
  lines: Record<string, unknown>[];
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): void;
}

/** Runs `levelset relay` with exactly `env` (plus PATH/HOME), collecting its JSON log lines. */
function runRelay(env: Record<string, string>): Run {
  const child = spawn(process.execPath, [cliPath, 'relay'], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: Record<string, unknown>[] = [];
  let buffer = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
      const line = buffer.slice(0, i);
      buffer = buffer.slice(i + 1);
      try {
        lines.push(JSON.parse(line));
      } catch {
        lines.push({ raw: line });
      }
    }
  });
  child.stderr.on('data', (chunk: Buffer) => lines.push({ stderr: chunk.toString() }));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { lines, exited, kill: (signal) => child.kill(signal) };
}

describe('relay/main.ts', () => {
  it('exits 1 naming the bad variables', async () => {
    const run = runRelay({ RELAY_PORT: 'eighty', LOG_LEVEL: 'chatty' });
    assert.equal(await run.exited, 1);
    const fatal = run.lines.find((l) => l.severity === 'CRITICAL');
    assert.ok(fatal, JSON.stringify(run.lines));
    assert.match(String(fatal.message), /invalid relay configuration/);
    for (const name of ['RELAY_PORT', 'LOG_LEVEL', 'GOOGLE_CLOUD_PROJECT'])
      assert.match(String(fatal.message), new RegExp(name));
  });

  describe('against a cluster and the Pub/Sub emulator', () => {
    let cluster: TestCluster;
    let emulator: PubSubEmulator;

    before(async () => {
      [cluster, emulator] = await startAll([startTestCluster(), startPubSubEmulator()]);
    });
    after(async () => {
      await Promise.allSettled([cluster?.stop(), emulator?.stop()]);
    });

    it('becomes ready, and exits 0 on SIGTERM after stopping and flushing', async () => {
      const topic = `relay-main-${uniqueSuffix()}`;
      const pubsub = new PubSub({ projectId: emulator.projectId, ...emulatorClientOptions(emulator.host) });
      await pubsub.createTopic(topic);
      await pubsub.close();
      const port = await freePort();
      const run = runRelay({
        KUBECONFIG: cluster.kubeconfigPath,
        PUBSUB_EMULATOR_HOST: emulator.host,
        LEVELSET_TOPIC: topic,
        RELAY_PORT: String(port),
      });
      try {
        await waitFor(
          async () => {
            const res = await fetch(`http://127.0.0.1:${port}/readyz`);
            return res.status === 200;
          },
          // A process start from the TypeScript sources, as local/service.ts gives one (30 s) and
          // more: on 2 cores shared with another test file's stack it took over 20 s.
          { timeoutMs: 60_000, message: 'relay /readyz 200' },
        );
        const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        assert.match(metrics, /levelset_relay_informer_synced\{resource="[^"]+"\} 1/);
      } catch (err) {
        run.kill('SIGKILL');
        throw err;
      }
      run.kill('SIGTERM');
      assert.equal(await run.exited, 0, JSON.stringify(run.lines.slice(-5)));
      const messages = run.lines.map((l) => l.message);
      assert.ok(messages.includes('relay stopping: stopping informers, flushing keys'));
      assert.ok(messages.includes('relay stopped'));
    });
  });
});
