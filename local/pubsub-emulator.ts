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
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, realpathSync, renameSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { PubSub } from '@google-cloud/pubsub';
import { emulatorClientOptions } from '../core/publish.ts';
import { levelsetModule, packageRoot } from './module-path.ts';

export interface PubSubEmulator {
  /** `host:port`, the value for `PUBSUB_EMULATOR_HOST`. */
  host: string;
  /** The project id used with it (any id works on the emulator). */
  projectId: string;
  /** PID of the emulator's guard process (local/guard.ts), the parent of its Java process. */
  pid: number;
  /**
   * Stops the emulator (SIGTERM; its guard SIGKILLs it after 5 s; the guard is SIGKILLed after 8 s;
   * 60 and 63 s when it writes its class-data-sharing archive, which takes a few seconds, once).
   */
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

/** The project id used with the emulator (any id works on it). */
export const EMULATOR_PROJECT_ID = 'local-project';

/** `host:port` of an emulator listening on `port` of 127.0.0.1: the value for `PUBSUB_EMULATOR_HOST`. */
export const emulatorHostOf = (port: number): string => `127.0.0.1:${port}`;

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
 * nothing, so the local stand-in should take as little of it as it can. A bounded heap: without
 * `-Xmx` the JVM's default is a quarter of the machine's memory (6 GiB on 24 GiB) and its initial
 * heap a 64th (384 MiB), so its RSS grew with every page the collector touched (258 → 350 MiB in a
 * 30-minute soak) while the emulator's live objects were about 10 MiB after a collection (`jcmd
 * GC.heap_info` during a soak); 128 MiB holds a soak's bursts of a thousand messages with room to
 * spare. With these flags the committed heap stays at its initial 32 MiB through a soak (the JVM's
 * native memory tracking): its RSS grows with its threads instead, one per new key. Google's
 * emulator (0.8.20) keeps a backlog per ordering key of an ordered subscription, each with a
 * single-thread scheduler, and never drops them: one thread and ≈ 27 KiB of RSS per ordering key it
 * has seen (2 000 messages on 2 000 keys: 20 → 2 434 threads, 104 → 237 MiB; on 10 keys: 43
 * threads, 116 MiB; decision 68). A heap committed and touched at start (`-Xms128m
 * -XX:+AlwaysPreTouch`) adds ≈ 100 MiB at start and does not flatten that. Unless the environment
 * sets its own, the class-data-sharing flag of {@link classDataSharing} is added.
 */
export const EMULATOR_JVM_OPTIONS = [
  '-XX:+UseSerialGC',
  '-XX:TieredStopAtLevel=1',
  '-Xms32m',
  '-Xmx128m',
] as const;

/**
 * Where the emulator's class-data-sharing archives are kept (JDK's AppCDS: the classes the emulator
 * loads at start-up, parsed and verified once, mapped by every later JVM instead): in
 * node_modules/.cache, where tools keep their caches, so that it outlives a run.
 */
const CDS_DIRECTORY = join(packageRoot, 'node_modules', '.cache', 'levelset-pubsub-emulator');

/** ms the emulator is given to stop when it writes its archive on the way (a few seconds on a busy machine). */
const ARCHIVING_GRACE_MS = 60_000;

/** The `java` the emulator's launcher runs: `$JAVA_HOME/bin/java`, else the first on PATH. */
function javaCommand(): string | undefined {
  const dirs = process.env.JAVA_HOME
    ? [join(process.env.JAVA_HOME, 'bin')]
    : (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  for (const dir of dirs) {
    const java = join(dir, 'java');
    if (existsSync(java)) return java;
  }
  return undefined;
}

/**
 * The emulator's class-data-sharing archive (JDK 13+ dynamic AppCDS; the JDK's own flags): `use`,
 * the JVM flag that maps it when it exists, else `create`, the flag that writes it at the JVM's exit
 * into `pending` (a file of this JVM's own, moved to `path` once the JVM has exited cleanly, so that
 * no JVM ever maps a half-written one). It halves the CPU of the emulator's start (2.1 → 1.1 s
 * measured). Named after the emulator's jar files and the `java` binary (paths, sizes, mtimes):
 * another SDK or JDK gets an archive of its own, as the JVM refuses one made by another (it then
 * runs without, as it would anyway). `undefined` when the cache directory cannot be written.
 */
function classDataSharing(launcher: string): { path: string; pending: string; flag: string } | undefined {
  try {
    const lib = join(dirname(dirname(launcher)), 'lib');
    const java = javaCommand();
    const files = [...readdirSync(lib).map((f) => join(lib, f)), ...(java ? [realpathSync(java)] : [])];
    const identity = createHash('sha256');
    for (const file of files) {
      const stat = statSync(file);
      identity.update(`${file}\0${stat.size}\0${stat.mtimeMs}\0`);
    }
    mkdirSync(CDS_DIRECTORY, { recursive: true });
    const path = join(CDS_DIRECTORY, `${identity.digest('hex').slice(0, 16)}.jsa`);
    if (existsSync(path)) return { path, pending: path, flag: `-XX:SharedArchiveFile=${path}` };
    const pending = `${path}.${process.pid}.${randomBytes(4).toString('hex')}`;
    return { path, pending, flag: `-XX:ArchiveClassesAtExit=${pending}` };
  } catch {
    return undefined;
  }
}

/**
 * Starts the emulator on 127.0.0.1 (project {@link EMULATOR_PROJECT_ID}) and waits until it said it
 * listens on its port and answers there (at most 120 s: only a start that fails waits it out; the
 * JVM's start takes over 30 s on a busy machine). Another process answering on the port is never
 * taken for it.
 * @throws {Error} when the launcher is missing, exits early, cannot listen on the port (another
 *   process took it), or does not answer in time.
 */
export async function startPubSubEmulator(options: { port?: number } = {}): Promise<PubSubEmulator> {
  const launcher = findPubSubEmulatorLauncher();
  const port = options.port ?? (await freePort());
  const host = emulatorHostOf(port);
  const guard = levelsetModule('local/guard.ts');
  const cds = process.env.CLOUD_PUBSUB_EMULATOR_OPTS ? undefined : classDataSharing(launcher);
  const creating = cds !== undefined && cds.pending !== cds.path;
  const child: ChildProcess = spawn(
    process.execPath,
    [guard, launcher, `--host=127.0.0.1`, `--port=${port}`],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      detached: false,
      env: {
        ...process.env,
        ...(creating ? { LEVELSET_GUARD_GRACE_MS: String(ARCHIVING_GRACE_MS) } : {}),
        CLOUD_PUBSUB_EMULATOR_OPTS:
          process.env.CLOUD_PUBSUB_EMULATOR_OPTS ??
          [...EMULATOR_JVM_OPTIONS, ...(cds ? [cds.flag] : [])].join(' '),
      },
    },
  );
  let stderr = '';
  // What it prints once bound: until then, what answers on the port may be another process.
  const listeningLine = `Server started, listening on ${port}`;
  let listening = false;
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
    listening ||= stderr.includes(listeningLine);
  });
  let exited = false;
  child.once('exit', (code) => {
    exited = true;
    if (!cds || !creating) return;
    // A JVM stopped by SIGTERM exits 143 once it has written the archive; any other end may have
    // left it half-written.
    try {
      if (code === 143 || code === 0) renameSync(cds.pending, cds.path);
    } catch {
      // not written (the JVM could not): the next start creates it
    }
    rmSync(cds.pending, { force: true });
  });
  const stop = async () => {
    if (exited || child.pid === undefined) return;
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const graceMs = (creating ? ARCHIVING_GRACE_MS : 5000) + 3000;
    const killed = await Promise.race([gone.then(() => true), delay(graceMs).then(() => false)]);
    if (!killed) {
      child.kill('SIGKILL');
      await gone;
    }
  };
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (exited) throw new Error(`Pub/Sub emulator exited during start-up: ${stderr}`);
    // Another process bound the port after its choice: the JVM's main thread died, the JVM lives on.
    if (stderr.includes('java.net.BindException')) {
      await stop();
      throw new Error(
        `Pub/Sub emulator could not listen on ${host}: another process took the port: ${stderr}`,
      );
    }
    try {
      if (listening && (await fetch(`http://${host}/`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Pub/Sub emulator did not answer on ${host} in time: ${stderr}`);
    }
    await delay(50);
  }
  return { host, projectId: EMULATOR_PROJECT_ID, pid: child.pid ?? 0, stop };
}

/** The local push subscriptions' retry policy, ms: 1 → 10 s (Terraform's is 10 → 600 s). */
export const LOCAL_RETRY_BACKOFF = { minimumMs: 1000, maximumMs: 10_000 } as const;

export interface KeysTopologyOptions {
  projectId: string;
  emulatorHost: string;
  /** Keys topic id; default `levelset-keys`. */
  topic?: string;
  /**
   * The push endpoint of the keys subscription: the local push proxy (local/push-proxy.ts) in front
   * of `reconcile`. `undefined`: a pull subscription, which the push proxy pulls and pushes from
   * itself (its `pushWindow`, the stack's `cloud` push model).
   */
  pushEndpoint: string | undefined;
  /** Subscription id; default `<topic>-reconcile`. */
  subscription?: string;
  /**
   * Seconds a push delivery may take before Pub/Sub gives up on it and redelivers; default 60. The
   * emulator also waits this long to redeliver a push whose connection broke (no HTTP answer).
   */
  ackDeadlineSeconds?: number;
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
        ...(options.pushEndpoint !== undefined ? { pushConfig: { pushEndpoint: options.pushEndpoint } } : {}),
        enableMessageOrdering: options.messageOrdering ?? true,
        ackDeadlineSeconds: options.ackDeadlineSeconds ?? 60,
        retryPolicy: {
          // 1 → 10 s locally (Terraform uses 10 → 600).
          minimumBackoff: { seconds: LOCAL_RETRY_BACKOFF.minimumMs / 1000 },
          maximumBackoff: { seconds: LOCAL_RETRY_BACKOFF.maximumMs / 1000 },
        },
      })
      .catch(ignoreExists);
    return keysTopologyNames(options.projectId, topicId, subscriptionId);
  } finally {
    await pubsub.close();
  }
}
