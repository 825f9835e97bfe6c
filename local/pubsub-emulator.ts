/**
 * The Pub/Sub emulator from the Google Cloud SDK, started as a child process for tests and
 * `npm start`, and the same topic/subscription topology Terraform creates in the cloud.
 *
 * The `gcloud beta emulators pubsub start` wrapper leaves its Java child running when it exits, so
 * the SDK's own launcher (`platform/pubsub-emulator/bin/cloud-pubsub-emulator`, which `exec`s Java)
 * is started directly, under `local/guard.ts`, which stops it when this process dies however it dies
 * (SIGKILL included); `stop()` SIGTERMs the guard, which stops the emulator.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { PubSub } from '@google-cloud/pubsub';
import { emulatorClientOptions } from '../functions/publish.ts';

export interface PubSubEmulator {
  /** `host:port`, the value for `PUBSUB_EMULATOR_HOST`. */
  host: string;
  /** The project id used with it (any id works on the emulator). */
  projectId: string;
  /** PID of the emulator's guard process (local/guard.ts), the parent of its Java process. */
  pid: number;
  /** Stops the emulator (SIGTERM; its guard SIGKILLs it after 5 s; the guard is SIGKILLed after 8 s). */
  stop(): Promise<void>;
}

/**
 * Locates the Google Cloud SDK's emulator launcher.
 * Order: `CLOUDSDK_ROOT_DIR`, the SDK that holds `gcloud` on PATH, `gcloud info`.
 * @throws {Error} when the SDK or its `pubsub-emulator` component is missing.
 */
export function findPubSubEmulatorLauncher(): string {
  const roots: string[] = [];
  if (process.env.CLOUDSDK_ROOT_DIR) roots.push(process.env.CLOUDSDK_ROOT_DIR);
  try {
    const gcloud = execFileSync('sh', ['-c', 'command -v gcloud'], { encoding: 'utf8' }).trim();
    if (gcloud) roots.push(dirname(dirname(realpathSync(gcloud))));
  } catch {
    // no gcloud on PATH
  }
  roots.push('/usr/lib/google-cloud-sdk', '/google-cloud-sdk', '/opt/google-cloud-sdk');
  for (const root of roots) {
    const launcher = join(root, 'platform', 'pubsub-emulator', 'bin', 'cloud-pubsub-emulator');
    if (existsSync(launcher)) return launcher;
  }
  throw new Error(
    'Pub/Sub emulator not found: install the Google Cloud SDK with `gcloud components install pubsub-emulator` ' +
      '(or the google-cloud-cli-pubsub-emulator package), or set CLOUDSDK_ROOT_DIR',
  );
}

/** A free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * The emulator's JVM flags (the launcher reads `CLOUD_PUBSUB_EMULATOR_OPTS`; one set in the
 * environment wins): the serial collector and the C1 compiler alone, which halve the CPU the
 * emulator spends per pushed message. Pub/Sub itself costs the cluster's and the functions' CPU
 * nothing, so the local stand-in should take as little of it as it can.
 */
export const EMULATOR_JVM_OPTIONS = ['-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'] as const;

/**
 * Starts the emulator on 127.0.0.1 and waits until it answers (at most `startTimeoutMs`, default 60 000).
 * @throws {Error} when the launcher is missing, exits early, or does not answer in time.
 */
export async function startPubSubEmulator(
  options: { port?: number; projectId?: string; startTimeoutMs?: number } = {},
): Promise<PubSubEmulator> {
  const launcher = findPubSubEmulatorLauncher();
  const port = options.port ?? (await freePort());
  const host = `127.0.0.1:${port}`;
  const guard = join(import.meta.dirname, 'guard.ts');
  const child: ChildProcess = spawn(
    process.execPath,
    [guard, launcher, `--host=127.0.0.1`, `--port=${port}`],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: false,
      env: {
        ...process.env,
        CLOUD_PUBSUB_EMULATOR_OPTS: process.env.CLOUD_PUBSUB_EMULATOR_OPTS ?? EMULATOR_JVM_OPTIONS.join(' '),
      },
    },
  );
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  const stop = async () => {
    if (exited || child.pid === undefined) return;
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const killed = await Promise.race([gone.then(() => true), delay(8000).then(() => false)]);
    if (!killed) {
      child.kill('SIGKILL');
      await gone;
    }
  };
  const deadline = Date.now() + (options.startTimeoutMs ?? 60_000);
  for (;;) {
    if (exited) throw new Error(`Pub/Sub emulator exited during start-up: ${stderr}`);
    try {
      const res = await fetch(`http://${host}/`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Pub/Sub emulator did not answer on ${host} in time: ${stderr}`);
    }
    await delay(100);
  }
  return { host, projectId: options.projectId ?? 'local-project', pid: child.pid ?? 0, stop };
}

export interface KeysTopologyOptions {
  projectId: string;
  emulatorHost: string;
  /** Keys topic id; default `levelset-keys`. */
  topic?: string;
  /** The push endpoint of the keys subscription: the local push proxy (local/push-proxy.ts) in front of `reconcile`. */
  pushEndpoint: string;
  /** Subscription id; default `<topic>-reconcile`. */
  subscription?: string;
  /**
   * Seconds a push delivery may take before Pub/Sub gives up on it and redelivers; default 60. The
   * emulator also waits this long to redeliver a push whose connection broke (no HTTP answer).
   */
  ackDeadlineSeconds?: number;
  /** Retry backoff bounds in seconds; default 1 → 10 locally (Terraform uses 10 → 600). */
  minimumBackoffSeconds?: number;
  maximumBackoffSeconds?: number;
  /**
   * Message ordering on the push subscription; default `true` (the live keys'). `false` for the
   * resync's, whose keys carry no ordering key (terraform/pubsub.tf).
   */
  messageOrdering?: boolean;
}

/** Full names of the keys topology. */
export interface KeysTopology {
  topic: string;
  deadLetterTopic: string;
  subscription: string;
  deadLetterSubscription: string;
}

/**
 * The full names {@link ensureKeysTopology} creates for `topic` (default `levelset-keys`):
 * `<topic>`, `<topic>-dead-letter`, `<topic>-reconcile` (or `subscription`), `<topic>-dead-letter-inspect`.
 */
export function keysTopologyNames(
  projectId: string,
  topic = 'levelset-keys',
  subscription?: string,
): KeysTopology {
  return {
    topic: `projects/${projectId}/topics/${topic}`,
    deadLetterTopic: `projects/${projectId}/topics/${topic}-dead-letter`,
    subscription: `projects/${projectId}/subscriptions/${subscription ?? `${topic}-reconcile`}`,
    deadLetterSubscription: `projects/${projectId}/subscriptions/${topic}-dead-letter-inspect`,
  };
}

/**
 * Creates the keys topic, the dead-letter topic with a pull subscription to inspect it, and the
 * push subscription (ordered unless `messageOrdering: false`) with the retry policy: the shape of
 * `terraform/` except for one thing. The push subscription has **no dead-letter policy**: Pub/Sub emulator 0.8.20 cannot dead-letter
 * from an ordered subscription (its push loop dies with a NullPointerException and never delivers
 * again, for any key), so locally the push proxy in front of `reconcile` (local/push-proxy.ts)
 * counts the attempts and dead-letters, as Pub/Sub does in the cloud. Existing resources are kept
 * (idempotent).
 * @returns the full names of what exists now.
 */
export async function ensureKeysTopology(options: KeysTopologyOptions): Promise<KeysTopology> {
  const pubsub = new PubSub({ projectId: options.projectId, ...emulatorClientOptions(options.emulatorHost) });
  const topicId = options.topic ?? 'levelset-keys';
  const deadLetterId = `${topicId}-dead-letter`;
  const subscriptionId = options.subscription ?? `${topicId}-reconcile`;
  const ignoreExists = (err: { code?: number }) => {
    if (err.code !== 6) throw err; // gRPC ALREADY_EXISTS
  };
  try {
    await pubsub.createTopic(topicId).catch(ignoreExists);
    await pubsub.createTopic(deadLetterId).catch(ignoreExists);
    await pubsub.topic(deadLetterId).createSubscription(`${deadLetterId}-inspect`).catch(ignoreExists);
    await pubsub
      .topic(topicId)
      .createSubscription(subscriptionId, {
        pushConfig: { pushEndpoint: options.pushEndpoint },
        enableMessageOrdering: options.messageOrdering ?? true,
        ackDeadlineSeconds: options.ackDeadlineSeconds ?? 60,
        retryPolicy: {
          minimumBackoff: { seconds: options.minimumBackoffSeconds ?? 1 },
          maximumBackoff: { seconds: options.maximumBackoffSeconds ?? 10 },
        },
      })
      .catch(ignoreExists);
    return keysTopologyNames(options.projectId, topicId, subscriptionId);
  } finally {
    await pubsub.close();
  }
}
