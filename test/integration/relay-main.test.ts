// The relay process (relay/main.ts, run as `levelset relay` runs it, with this repository's registry): bad configuration exits 1 with a clear error; SIGTERM after
// start-up stops the informers, flushes and exits 0; with Pub/Sub unreachable, the flush gives up
// at its deadline (STOP_FLUSH_TIMEOUT_MS) and the relay exits 1 saying what it dropped; a relay of
// the local stack whose parent is SIGKILLed stops itself (local/parent-watch.ts).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { PubSub } from '@google-cloud/pubsub';
import { CoreV1Api } from '@kubernetes/client-node';
import { emulatorClientOptions } from '../../core/publish.ts';
import { startTestCluster, type TestCluster, uniqueSuffix } from '../../functions/kit/testing.ts';
import {
  emulatorHostOf,
  freePort,
  type PubSubEmulator,
  startPubSubEmulator,
} from '../../local/pubsub-emulator.ts';
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

    /**
     * The relay's environment with Pub/Sub unreachable (nothing listens on the emulator's port: each
     * publish retries UNAVAILABLE for RELAY_PUBLISH_TIMEOUT_MS) and a source namespace of its own,
     * whose Secret the test creates: the secret-replicator's key is then published, and never accepted.
     */
    const unreachablePubSub = async () => {
      const namespace = await cluster.createNamespace('relay-stop');
      const port = await freePort();
      const env = {
        KUBECONFIG: cluster.kubeconfigPath,
        PUBSUB_EMULATOR_HOST: emulatorHostOf(await freePort()),
        GOOGLE_CLOUD_PROJECT: emulator.projectId,
        LEVELSET_TOPIC: 'relay-stop',
        LEVELSET_SOURCE_NAMESPACE: namespace,
        RELAY_PORT: String(port),
        RELAY_PUBLISH_TIMEOUT_MS: '600000',
      };
      const metrics = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      /** Waits until the relay is ready, creates the Secret and waits until its key is being published. */
      const publishing = async () => {
        await waitFor(
          async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.ok,
          {
            timeoutMs: 60_000,
            message: 'relay /readyz 200',
          },
        );
        await cluster.kubeConfig.makeApiClient(CoreV1Api).createNamespacedSecret({
          namespace,
          body: { metadata: { name: 'source' }, stringData: { k: 'v' } },
        });
        await waitFor(
          async () =>
            /levelset_relay_keys_enqueued_total\{controller="secret-replicator"\} [1-9]/.test(
              await metrics(),
            ),
          {
            timeoutMs: 30_000,
            message: 'the Secret key enqueued',
          },
        );
        assert.doesNotMatch(
          await metrics(),
          /levelset_relay_keys_published_total\{[^}]*\} [1-9]/,
          'nothing published',
        );
      };
      return { env, publishing };
    };

    it('with Pub/Sub unreachable, exits 1 on SIGTERM after the flush deadline, naming the keys it dropped', async () => {
      const { env, publishing } = await unreachablePubSub();
      const run = runRelay(env);
      let code: number | null | undefined;
      void run.exited.then((c) => {
        code = c;
      });
      try {
        await publishing();
        run.kill('SIGTERM');
        // Bounded by the flush deadline; without one, the publish retries for 600 s.
        await waitFor(() => code !== undefined, { timeoutMs: 60_000, message: 'the relay to exit' });
      } finally {
        if (code === undefined) run.kill('SIGKILL');
      }
      assert.equal(code, 1, JSON.stringify(run.lines.slice(-5)));
      const dropped = run.lines.find((l) => String(l.message).startsWith('keys not published at stop'));
      assert.ok(dropped, JSON.stringify(run.lines.slice(-5)));
      assert.equal(dropped.severity, 'ERROR');
      assert.match(
        String(dropped.message),
        /dropped after the stop deadline \(the next resync enqueues them again\)/,
      );
      assert.ok(Number(dropped.unpublishedKeys) >= 1, JSON.stringify(dropped));
      assert.equal(run.lines.at(-1)?.message, 'relay stopped', 'its final line');
    });

    it('a relay of the local stack whose parent is SIGKILLed stops itself', {
      skip: process.platform !== 'linux',
    }, async () => {
      const { env, publishing } = await unreachablePubSub();
      // The parent starts the relay as the local stack does (local/service.ts: the parent watch preloaded).
      const parent = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import { startService } from ${JSON.stringify(new URL('../../local/service.ts', import.meta.url).href)};
const relay = await startService({ name: 'relay', args: [${JSON.stringify(cliPath)}, 'relay'], port: ${env.RELAY_PORT}, readyPath: '/readyz' });
process.stdout.write(relay.pid + '\\n');
setInterval(() => {}, 60_000);`,
        ],
        {
          env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      let out = '';
      parent.stdout.on('data', (c: Buffer) => {
        out += c.toString();
      });
      /** Whether process `pid` runs: it exists and is not a zombie (an orphan's reaper may be slow to reap). */
      const runs = (pid: number) => {
        try {
          return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
        } catch {
          return false;
        }
      };
      let relayPid = 0;
      try {
        await waitFor(() => /^\d+\n/.test(out), {
          timeoutMs: 90_000,
          message: 'the parent to start the relay',
        });
        relayPid = Number.parseInt(out, 10);
        await publishing();
        parent.kill('SIGKILL');
        await waitFor(() => !runs(relayPid), {
          timeoutMs: 60_000,
          message: `relay ${relayPid} to exit after its parent`,
        });
      } finally {
        parent.kill('SIGKILL');
        if (relayPid && runs(relayPid)) process.kill(relayPid, 'SIGKILL');
      }
    });
  });
});
