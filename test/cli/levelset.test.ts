/**
 * The `levelset` command, run as a real process (the package's `bin`) against a real local stack:
 * the cluster (local API server, or `TEST_KUBECONFIG`), the Pub/Sub emulator, both functions under
 * functions-framework and the relay, started once for the whole file. Every subcommand is run,
 * and the expected failures (unknown controller, malformed key, no stack, emulator gone, cluster
 * unreachable) are one line with a non-zero exit code and no stack trace.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PubSub } from '@google-cloud/pubsub';
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
} from '@kubernetes/client-node';
import type { Frame } from '../../cli/impl/watch.ts';
import { emulatorClientOptions } from '../../core/publish.ts';
import { controllers } from '../../examples/registry.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { DEMO_NAMESPACE } from '../../local/demo.ts';
import { freePort } from '../../local/pubsub-emulator.ts';
import { repoRoot } from '../../local/service.ts';
import { type LocalStack, startLocalStack } from '../../local/stack.ts';
import { readStackState, type StackState, writeStackState } from '../../local/state.ts';
import { waitFor } from '../support/wait.ts';

const packageJson = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
  bin: Record<string, string>;
};
const bin = join(repoRoot, packageJson.bin.levelset ?? 'missing');
const FOO_CRD = join(repoRoot, 'examples', 'foo', 'controllers', 'foo', 'crd.yaml');
const FOO_EXAMPLE = join(
  repoRoot,
  'examples',
  'foo',
  'test',
  'fixtures',
  'upstream',
  'sample-controller-example-foo.yaml',
);
const FOO_RESOURCE = { group: 'samplecontroller.k8s.io', version: 'v1alpha1', plural: 'foos' };

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Spawns the levelset bin with this Node (24) and collects its output. */
function spawnCli(
  args: string[],
  env: Record<string, string | undefined>,
): { child: ChildProcess; done: Promise<Run> } {
  const child = spawn(process.execPath, [bin, ...args], {
    cwd: repoRoot,
    env: { ...process.env, GOOGLE_CLOUD_PROJECT: undefined, METADATA_SERVER_DETECTION: 'none', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr?.on('data', (c: Buffer) => {
    stderr += c.toString();
  });
  const done = new Promise<Run>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

/** An expected failure: the exit code, one `levelset: …` line on stderr, no stack trace. */
function assertOneLineFailure(run: Run, code: number, pattern: RegExp): void {
  assert.equal(run.code, code, `exit code; stderr: ${run.stderr}`);
  const lines = run.stderr.trim().split('\n');
  assert.equal(lines.length, 1, `one line: ${run.stderr}`);
  assert.match(lines[0] ?? '', /^levelset: /);
  assert.match(lines[0] ?? '', pattern);
  assert.doesNotMatch(run.stderr + run.stdout, /\n\s+at /, 'no stack trace');
}

describe('levelset (the real binary against the local stack)', () => {
  let cluster: TestCluster;
  let stack: LocalStack;
  let stateDir: string;
  let namespace: string;
  const cli = (args: string[], env: Record<string, string | undefined> = {}) =>
    spawnCli(args, { LEVELSET_STATE_DIR: stateDir, ...env }).done;

  before(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'levelset-cli-'));
    cluster = await startTestCluster();
    namespace = await cluster.createNamespace('e2e-cli');
    stack = await startLocalStack({
      kubeconfigPath: cluster.kubeconfigPath,
      env: { LEVELSET_SOURCE_NAMESPACE: namespace },
      collapseMs: 50,
      stateDir,
      // `levelset resync` publishes the keys itself; nothing here calls the resync function.
      resyncOnDemand: true,
      onLog: (service, line) => {
        if (process.env.LEVELSET_TEST_VERBOSE) process.stderr.write(`[${service}] ${JSON.stringify(line)}\n`);
      },
    });
  });

  after(async () => {
    await stack?.stop();
    await cluster?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  test('the local stack writes its state file and per-service log files', () => {
    const state = readStackState(stateDir);
    assert.ok(state);
    assert.equal(state.emulatorHost, stack.emulator.host);
    assert.equal(state.relayUrl, stack.relay()?.url);
    assert.deepEqual(Object.keys(state.logs).sort(), ['reconcile', 'relay', 'resync']);
  });

  test('--help on every subcommand', async () => {
    const commands = [
      [],
      ['dev'],
      ['relay'],
      ['run'],
      ['reconcile'],
      ['resync'],
      ['dead-letters'],
      ['dead-letters', 'list'],
      ['dead-letters', 'replay'],
      ['controllers'],
      ['status'],
      ['conditions'],
      ['plan'],
      ['logs'],
      ['new', 'controller'],
    ];
    const runs = await Promise.all(commands.map((c) => cli([...c, '--help'])));
    for (const [i, run] of runs.entries()) {
      assert.equal(run.code, 0, `${commands[i]?.join(' ')} --help: ${run.stderr}`);
      assert.match(run.stdout, new RegExp(`levelset ${commands[i]?.join(' ')}`));
    }
    const completion = await cli(['completion']);
    assert.equal(completion.code, 0);
    assert.match(completion.stdout, /levelset/);
  });

  test('npm exec levelset runs the bin under the project Node', async () => {
    const run = await new Promise<Run>((resolve) => {
      const child = spawn('npm', ['exec', '--silent', '--', 'levelset', 'controllers', '-o', 'json'], {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout.on('data', (c: Buffer) => {
        stdout += c.toString();
      });
      child.once('close', (code) => resolve({ code, stdout, stderr: '' }));
    });
    assert.equal(run.code, 0);
    assert.equal((JSON.parse(run.stdout) as unknown[]).length, controllers.length);
  });

  // npx installs the project itself into its cache on a first run, checking its package.json
  // against the Node npm runs on: the host's, older than the project's own Node 24.
  const hostPath = (process.env.PATH ?? '')
    .split(delimiter)
    .filter((dir) => !dir.includes('node_modules'))
    .join(delimiter);
  const hostNode = spawnSync('node', ['-p', 'process.versions.node'], {
    env: { ...process.env, PATH: hostPath },
    encoding: 'utf8',
  }).stdout.trim();
  test("a first npx levelset on the host's Node prints no engine warning", {
    skip: /^(2[4-9]|[3-9]\d)\./.test(hostNode)
      ? `the host runs Node ${hostNode}: nothing to warn about`
      : false,
  }, async () => {
    const cache = mkdtempSync(join(tmpdir(), 'levelset-npx-cache-'));
    try {
      const run = await new Promise<Run>((resolve) => {
        const child = spawn('npm', ['exec', '--', 'levelset', 'controllers', '-o', 'json'], {
          cwd: repoRoot,
          env: {
            ...process.env,
            PATH: hostPath,
            npm_config_cache: cache,
            npm_config_update_notifier: 'false',
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (c: Buffer) => {
          stdout += c.toString();
        });
        child.stderr.on('data', (c: Buffer) => {
          stderr += c.toString();
        });
        child.once('close', (code) => resolve({ code, stdout, stderr }));
      });
      assert.equal(run.code, 0, run.stderr);
      assert.doesNotMatch(run.stderr, /EBADENGINE|levelset@/, 'no warning about the project itself');
      assert.equal((JSON.parse(run.stdout) as unknown[]).length, controllers.length, 'ran on Node 24');
    } finally {
      rmSync(cache, { recursive: true, force: true });
    }
  });

  test('controllers: the registry with primary, watches, owned kinds and RBAC rules', async () => {
    const table = await cli(['controllers']);
    assert.equal(table.code, 0, table.stderr);
    for (const c of controllers) assert.match(table.stdout, new RegExp(c.name));
    const json = JSON.parse((await cli(['controllers', '-o', 'json'])).stdout) as {
      name: string;
      primary: string;
      watches: string[];
      owns: string[];
      rbac: string[];
    }[];
    // ConfigMaps are owned (mapped through controller references) and watched (mapped by index):
    // one list+watch, listed once.
    assert.deepEqual(json.find((c) => c.name === 'configmap-bundle')?.watches, [
      'configmapbundles.examples.levelset.dev',
      'configmaps',
    ]);
    const foo = json.find((c) => c.name === 'foo');
    assert.ok(foo);
    assert.match(foo.primary, /^Foo \(samplecontroller\.k8s\.io\/v1alpha1\)$/);
    assert.deepEqual(foo.owns, ['Deployment']);
    assert.ok(foo.rbac.includes('apps deployments: get,list,create,patch,delete'), foo.rbac.join('; '));
  });

  test('reconcile --wait publishes one key and prints its outcome', async () => {
    const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: 'manual' }, stringData: { k: 'v' } },
    });
    const run = await cli(['reconcile', 'secret-replicator', `${namespace}/manual`, '--wait']);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /published secret-replicator .*\/manual .*\(message \S+\)/);
    assert.match(run.stdout, /delivery 1: success in \d/);
    assert.match(run.stdout, new RegExp(`secret-replicator ${namespace}/manual: success after`));
    const line = stack.reconcile.logs.find((l) => l.reason === 'manual' && typeof l.outcome === 'string');
    assert.ok(line, 'the function logged a manual delivery');
  });

  test("the README's levelset examples run as written (the demo's namespace mapped to the test's)", async () => {
    // README "Try it": the second sh block, one `npx levelset …` command per line.
    // From "Try it" on: "Your own controllers" above it makes a project of its own (test/package/).
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8').split('\n## Try it\n')[1] ?? '';
    const examples = [...readme.matchAll(/^npx levelset (.+?)(?:\s+#.*)?$/gm)].map((m) => m[1] ?? '');
    assert.ok(examples.length >= 5, `README examples: ${examples.join(' | ')}`);
    // The demo applies the upstream example-foo into DEMO_NAMESPACE; this test applies it into its own.
    const foo = loadAllYaml(readFileSync(FOO_EXAMPLE, 'utf8'))[0] as KubernetesObject;
    const fooKey = `${DEMO_NAMESPACE}/${foo.metadata?.name}`;
    assert.ok(
      examples.some((e) => e.includes(` ${fooKey} `)),
      `the README reconciles the demo's Foo ${fooKey}: ${examples.join(' | ')}`,
    );
    await cluster.applyCrd(FOO_CRD, FOO_RESOURCE, namespace);
    await KubernetesObjectApi.makeApiClient(cluster.kubeConfig).create({
      ...foo,
      metadata: { ...foo.metadata, namespace },
    });
    const ran = new Set<string>();
    for (const example of examples) {
      const args = example
        .split(/\s+/)
        .map((a) => a.replace(new RegExp(`^${DEMO_NAMESPACE}/`), `${namespace}/`))
        // `logs -f` follows and `status --watch` refreshes until interrupted: their first answer
        // (the lines so far, one status) is the example's answer here; `--watch` has a test of its own.
        .filter((a) => a !== '-f' && a !== '--follow' && a !== '--watch');
      // `status --watch` without `--watch` is the `status` just run: once is enough.
      if (ran.has(args.join(' '))) continue;
      ran.add(args.join(' '));
      const run = await cli(args);
      // `conditions` and `plan` exit 1 when something is not Ready or would change (a gate): here
      // the Foo's Deployment has no available replica, which both say.
      const answers = args[0] === 'conditions' || args[0] === 'plan' ? [0, 1] : [0];
      assert.ok(
        answers.includes(run.code ?? -1),
        `npx levelset ${example}: exit ${run.code}: ${run.stdout}${run.stderr}`,
      );
      if (args[0] === 'reconcile')
        assert.match(run.stdout, new RegExp(`foo ${namespace}/${foo.metadata?.name}: success after`));
    }
  });

  test('reconcile --wait of a key naming no object: not found: nothing to do, exit 3', async () => {
    await cluster.applyCrd(FOO_CRD, FOO_RESOURCE, namespace);
    const run = await cli(['reconcile', 'foo', `${namespace}/absent`, '--wait']);
    assert.equal(run.code, 3, run.stdout + run.stderr);
    assert.match(run.stdout, /delivery 1: success in \d/);
    assert.match(
      run.stdout,
      new RegExp(`foo ${namespace}/absent: not found: nothing to do \\(no Foo ${namespace}/absent; `),
    );
    const secret = await cli(['reconcile', 'secret-replicator', `${namespace}/absent`, '--wait']);
    assert.equal(secret.code, 3, secret.stdout + secret.stderr);
    assert.match(secret.stdout, /not found: nothing to do/);
  });

  test('reconcile: unknown controller and malformed key are one line, exit 2', async () => {
    assertOneLineFailure(
      await cli(['reconcile', 'nope', 'a/b']),
      2,
      /unknown controller "nope": one of .*foo/,
    );
    assertOneLineFailure(
      await cli(['reconcile', 'foo', 'a/b/c']),
      2,
      /malformed key "a\/b\/c": foo keys are namespace\/name/,
    );
    assertOneLineFailure(await cli(['reconcile', 'foo']), 2, /Not enough non-option arguments/);
  });

  test('resync publishes every key with a summary per controller; --dry-run publishes none', async () => {
    const before = stack.reconcile.logs.filter((l) => l.reason === 'resync').length;
    const dry = await cli(['resync', '--controller', 'secret-replicator', '--dry-run']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, /secret-replicator\s*│\s*1\s/);
    assert.match(dry.stdout, /would publish 1 keys/);
    const run = await cli(['resync']);
    assert.equal(run.code, 0, run.stderr);
    for (const c of controllers) assert.match(run.stdout, new RegExp(`${c.name}\\s*│`));
    assert.match(run.stdout, /published \d+ keys to local stack/);
    assert.match(run.stderr, /^$|resync/, 'plain progress lines (not a TTY)');
    await waitFor(() => stack.reconcile.logs.filter((l) => l.reason === 'resync').length > before, {
      message: 'a key of this resync reconciled',
    });
    assertOneLineFailure(await cli(['resync', '--controller', 'nope']), 2, /unknown controller/);
  });

  test('status: relay ready with its informers, backlog source, no dead letters', async () => {
    const run = await cli(['status']);
    assert.equal(run.code, 0, run.stdout + run.stderr);
    assert.match(run.stdout, /relay\s+ready at http:\/\/127\.0\.0\.1:\d+/);
    // An informer of a resource this cluster does not serve (the examples' CRDs are not installed
    // here) is named as waiting for it; every other one is synced.
    const informers = /informers\s+(\d+)\/(\d+) synced(?:: waiting for (.*))?$/m.exec(run.stdout);
    assert.ok(informers, run.stdout);
    const waiting = informers[3]?.split(', ') ?? [];
    assert.equal(Number(informers[1]) + waiting.length, Number(informers[2]));
    for (const id of waiting) assert.doesNotMatch(id, /^(v1|apps\/v1)\//, 'a built-in resource is served');
    // The emulator has no metrics: the local stack's delivery watchdog counts the backlog.
    assert.match(run.stdout, /backlog\s+\d+ undelivered keys/);
    assert.match(run.stdout, /delivered\s+last /);
    assert.match(run.stdout, /drift\s+\d+ keys corrected by the resync since the stack started/);
    assert.match(run.stdout, /dead letters\s+0 in /);
  });

  test('status --watch: the figures of every refresh are read from the stack and move with the work', async () => {
    const watch = spawnCli(['status', '--watch', '-o', 'json', '--interval', '0.5', '--window', '30'], {
      LEVELSET_STATE_DIR: stateDir,
    });
    // One JSON frame per line; a line still being written is not a frame yet.
    let out = '';
    watch.child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
    });
    const frames = (): Frame[] =>
      out
        .split('\n')
        .slice(0, -1)
        .map((line) => JSON.parse(line) as Frame);
    const replicator = (f: Frame | undefined) =>
      f?.controllers.find((c) => c.controller === 'secret-replicator');
    try {
      // Under load one source may miss a refresh's deadline (the frame then notes it): the first
      // frame in which every source answered is the baseline.
      const first = await waitFor(() => frames().find((f) => f.notes.length === 0), {
        message: 'a frame in which every source answers',
      });
      const before = replicator(first);
      const reconciled = before?.total.success ?? 0;
      const published = before?.published ?? 0;
      // Work: three new source Secrets, each reconciled by secret-replicator.
      const core = cluster.kubeConfig.makeApiClient(CoreV1Api);
      for (const name of ['watch-a', 'watch-b', 'watch-c'])
        await core.createNamespacedSecret({
          namespace,
          body: { metadata: { name }, stringData: { k: name } },
        });
      const moved = await waitFor(
        () =>
          frames().find((f) => {
            const r = replicator(f);
            return r &&
              (r.total.success ?? 0) >= reconciled + 3 &&
              r.published >= published + 3 &&
              (r.perSecond.success ?? 0) > 0
              ? f
              : undefined;
          }),
        { timeoutMs: 30_000, message: 'a frame with the three reconciles' },
      );
      const r = replicator(moved);
      assert.ok(r?.p50Ms !== undefined && r.p95Ms !== undefined && r.p50Ms <= r.p95Ms, JSON.stringify(r));
      assert.ok(moved.windowSeconds > 0 && moved.windowSeconds <= 31, `window ${moved.windowSeconds}`);
      assert.equal(typeof moved.backlog, 'number');
      assert.equal(moved.deadLettered, 0);
      await waitFor(() => frames().length >= 3, { message: 'a third frame: the view refreshes in place' });
      // The delivery SLO's measure: every delivery line of the function carries its delay, a number.
      const watched = stack.reconcile.logs.filter(
        (l) => l.reason === 'watch' && typeof l.outcome === 'string' && typeof l.deliveryDelayMs === 'number',
      );
      assert.ok(watched.length >= 3, 'deliveryDelayMs on the final lines of the watch keys');
    } finally {
      watch.child.kill('SIGTERM');
    }
    const run = await watch.done;
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
  });

  test('dead-letters list shows a dead-lettered key without acking it; replay republishes and acks it', {
    skip: process.env.TEST_KUBECONFIG ? 'needs the local API server to fail requests' : false,
  }, async () => {
    // The reconcile function retries a failed key itself and dead-letters it after 5 attempts
    // (functions/runtime/retry.ts), as the push proxy would (local/push-proxy.ts) with LEVELSET_RETRY=pubsub.
    const local = cluster.local;
    assert.ok(local);
    // Every GET of this source Secret answers 500: the reconcile fails transiently, Pub/Sub retries.
    local.faults.failNext({ verb: 'get', resource: 'secrets', namespace, name: 'broken' }, 1000, {
      status: 500,
    });
    const published = await cli(['reconcile', 'secret-replicator', `${namespace}/broken`]);
    assert.equal(published.code, 0, published.stderr);

    type Listed = { controller: string; key: string; deliveryAttempts?: number; firstPublished?: string };
    // Five attempts with the function's per-key backoff (5 ms, doubling) take well under a second;
    // the function logs the dead letter once Pub/Sub accepted it (functions/runtime/reconcile.ts). Waiting
    // on that line, in this process, instead of a `dead-letters list` process a second: each is a
    // Node start that loads client-node and the Pub/Sub client.
    await waitFor(
      () =>
        stack.reconcile.logs.some(
          (l) =>
            typeof l.message === 'string' &&
            l.message.startsWith('dead-lettered after') &&
            (l['logging.googleapis.com/labels'] as { key?: string } | undefined)?.key ===
              `${namespace}/broken`,
        ),
      { timeoutMs: 60_000, message: 'the function dead-lettered the key' },
    );
    const listed = await waitFor(
      async () => {
        const run = await cli(['dead-letters', 'list', '-o', 'json']);
        const letters = JSON.parse(run.stdout) as Listed[];
        return letters.length > 0 ? letters : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 1000, message: 'the key in the dead-letter subscription' },
    );
    assert.deepEqual(
      listed.map((l) => [l.controller, l.key, l.deliveryAttempts]),
      [['secret-replicator', `${namespace}/broken`, 5]],
    );
    assert.ok(listed[0]?.firstPublished);
    const table = await cli(['dead-letters', 'list']);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, new RegExp(`secret-replicator\\s*│\\s*${namespace}/broken\\s*│\\s*5\\s*│`));
    assert.match(table.stdout, /1 dead letters in /);

    const status = await cli(['status']);
    assert.equal(status.code, 1, 'unhealthy while keys are dead-lettered');
    assert.match(status.stdout, /dead letters\s+1 in .*levelset dead-letters list/);

    const dry = await cli(['dead-letters', 'replay', '--dry-run']);
    assert.equal(dry.code, 0, dry.stderr);
    assert.match(dry.stdout, new RegExp(`would replay secret-replicator ${namespace}/broken`));

    local.faults.clear();
    const replay = await cli(['dead-letters', 'replay']);
    assert.equal(replay.code, 0, replay.stderr);
    assert.match(
      replay.stdout,
      new RegExp(`replayed secret-replicator ${namespace}/broken \\(message \\S+\\)`),
    );
    assert.match(replay.stdout, /replayed 1 of 1 dead letters/);
    const empty = await cli(['dead-letters', 'list']);
    assert.match(empty.stdout, /no dead letters in /);
    await waitFor(
      () =>
        stack.reconcile.logs.some(
          (l) =>
            l.reason === 'manual' &&
            l.outcome === 'success' &&
            (l['logging.googleapis.com/labels'] as { key?: string } | undefined)?.key ===
              `${namespace}/broken`,
        ),
      { message: 'the replayed key reconciled' },
    );
  });

  test('relay: the relay process behind `levelset relay` becomes ready and stops on SIGTERM', async () => {
    const port = await freePort();
    const relay = spawnCli(['relay'], { ...stack.env, RELAY_PORT: String(port), LOG_LEVEL: 'warn' });
    try {
      await waitFor(
        async () => {
          const res = await fetch(`http://127.0.0.1:${port}/readyz`);
          return res.ok;
        },
        { message: 'levelset relay ready' },
      );
    } finally {
      relay.child.kill('SIGTERM');
    }
    assert.equal((await relay.done).code, 0);
  });

  test('run --in-process: the controllers in one process become ready and stop on SIGTERM; without the flag, exit 2', async () => {
    const port = await freePort();
    const run = spawnCli(['run', '--in-process'], {
      ...stack.env,
      RELAY_PORT: String(port),
      LOG_LEVEL: 'warn',
    });
    try {
      await waitFor(async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok, {
        message: 'levelset run --in-process ready',
      });
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      assert.match(metrics, /^# TYPE workqueue_depth gauge$/m, "client-go's workqueue metrics");
    } finally {
      run.child.kill('SIGTERM');
    }
    assert.equal((await run.done).code, 0);
    const bare = await cli(['run']);
    assert.equal(bare.code, 2);
    assert.equal(
      bare.stderr,
      'levelset: levelset run needs --in-process (the serverless path is levelset relay plus the functions)\n',
    );
  });

  /** The validating webhook configurations Levelset registered in the test's cluster. */
  const webhookConfigurations = async () =>
    (
      await cluster.kubeConfig.makeApiClient(AdmissionregistrationV1Api).listValidatingWebhookConfiguration()
    ).items
      .map((c) => c.metadata?.name ?? '')
      .filter((n) => n.startsWith('levelset-'));

  /**
   * `levelset dev` with `args` against the test's cluster, its state in `stateDir`, in a process
   * group of its own, as a terminal runs a command (Ctrl-C sends SIGINT to the whole group): its
   * stdout and stderr together in `output()`; `interrupt()` is that Ctrl-C; `groupGone()` waits
   * until every process of the group has exited.
   */
  const startDev = (args: string[], stateDir: string) => {
    const dev = spawn(process.execPath, [bin, 'dev', '--cluster', 'kubeconfig', ...args], {
      cwd: repoRoot,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        GOOGLE_CLOUD_PROJECT: undefined,
        METADATA_SERVER_DETECTION: 'none',
        KUBECONFIG: cluster.kubeconfigPath,
        LEVELSET_STATE_DIR: stateDir,
        LEVELSET_SOURCE_NAMESPACE: namespace,
      },
    });
    let output = '';
    const collect = (c: Buffer) => {
      output += c.toString();
    };
    dev.stdout.on('data', collect);
    dev.stderr.on('data', collect);
    const pgid = dev.pid ?? 0;
    return {
      output: () => output,
      exited: new Promise<number | null>((resolve) => dev.once('close', resolve)),
      interrupt: () => process.kill(-pgid, 'SIGINT'),
      groupGone: () =>
        waitFor(
          () => {
            try {
              process.kill(-pgid, 0);
              return false;
            } catch {
              return true;
            }
          },
          { timeoutMs: 60_000, message: 'every process of the group gone' },
        ),
    };
  };

  // One `levelset dev` run (a whole stack of its own: emulator, relay, functions, admission) serves
  // both what a user sees of it and a Ctrl-C that lands in a resync.
  test('dev: runs the pipeline against the cluster in KUBECONFIG, found by status; Ctrl-C while a resync is running stops it with no error', async (t) => {
    const local = cluster.local;
    // Foo's resync LIST (served once its CRD is) tells when a resync has started.
    await cluster.applyCrd(FOO_CRD, FOO_RESOURCE, namespace);
    const devState = mkdtempSync(join(tmpdir(), 'levelset-cli-dev-'));
    t.after(() => rmSync(devState, { recursive: true, force: true }));
    const dev = startDev(['--no-demo', '--resync-interval-ms', '1000'], devState);
    let removeLatency = () => {};
    try {
      const state = await waitFor(
        () => {
          const current = readStackState(devState);
          return current?.relayUrl ? current : undefined;
        },
        {
          timeoutMs: 90_000,
          message: 'levelset dev to write its state file',
        },
      );
      assert.notEqual(state.emulatorHost, stack.emulator.host, 'a stack of its own');
      // The registry's webhooks, registered with the cluster: its API server runs on this machine.
      await waitFor(() => /admission\s+https:\/\/\S+ .*registered with /.test(dev.output()), {
        timeoutMs: 30_000,
        message: 'the admission line of the banner',
      });
      assert.deepEqual(await webhookConfigurations(), ['levelset-foo-scale']);
      const status = await cli(['status'], { LEVELSET_STATE_DIR: devState });
      assert.equal(status.code, 0, status.stdout + status.stderr);
      assert.match(status.stdout, new RegExp(`relay\\s+ready at ${state.relayUrl}`));
      // The controllers' Pub/Sub goes through the proxy that keeps topics' labels as Pub/Sub does
      // (the emulator refuses label updates): the stack a user runs behaves as the tests' stack.
      const proxy = /the controllers' calls through (\S+) \(topics' labels/.exec(dev.output())?.[1];
      assert.ok(proxy, dev.output());
      const pubsub = new PubSub({ projectId: state.projectId, ...emulatorClientOptions(proxy) });
      try {
        const [topic] = await pubsub.createTopic({ name: 'dev-labels', labels: { a: '1' } });
        await topic.setMetadata({ labels: { a: '2' } });
        assert.deepEqual((await topic.getMetadata())[0].labels, { a: '2' });
      } finally {
        await pubsub.close();
      }
      // Its start finished: the state file is written before the admission service starts, and a
      // Ctrl-C then lands in a start, not in a resync (seen under load). Its last line of the start
      // is the count of source Secrets, listed once the banner is out.
      await waitFor(() => /^watching: \d+ source Secrets/m.test(dev.output()), {
        timeoutMs: 90_000,
        message: 'levelset dev to finish its start (its "watching:" line)',
      });
      // Holding a request needs the local API server; on TEST_KUBECONFIG's cluster, Ctrl-C lands
      // wherever the run is.
      if (local) {
        // The resync's LIST of the source Secrets now takes 20 s: a resync that starts is in flight.
        const held = Date.now();
        removeLatency = local.faults.addLatency({ verb: 'list', resource: 'secrets', namespace }, 20_000);
        await waitFor(
          () => local.requests.count((e) => e.verb === 'list' && e.resource === 'foos' && e.time > held) > 0,
          {
            timeoutMs: 60_000,
            message: 'a resync running (its LIST of Foos answered, of the source Secrets held)',
          },
        );
      }
    } finally {
      dev.interrupt();
    }
    const code = await dev.exited;
    removeLatency();
    const output = dev.output();
    assert.equal(code, 0, output);
    assert.match(output, /stopped\.\n$/);
    assert.doesNotMatch(output, /error|failed|not valid JSON/i);
    assert.equal(readStackState(devState), undefined, 'the state file is removed on stop');
    // Removed with the stack: a webhook whose front is gone would refuse every Foo write.
    assert.deepEqual(await webhookConfigurations(), []);
    await dev.groupGone();
  });

  test('dev: Ctrl-C during the start stops it without a "could not start"', {
    skip: process.env.TEST_KUBECONFIG ? 'needs the local API server to hold a request' : false,
  }, async (t) => {
    const local = cluster.local;
    assert.ok(local);
    const devState = mkdtempSync(join(tmpdir(), 'levelset-cli-dev-start-'));
    t.after(() => rmSync(devState, { recursive: true, force: true }));
    // Every create waits 5 s: the start's registration of the admission webhooks (after the
    // services' lines) is then still in flight when Ctrl-C lands.
    const removeLatency = local.faults.addLatency({ verb: 'create' }, 5_000);
    t.after(removeLatency);
    const dev = startDev(['--no-demo'], devState);
    try {
      await waitFor(() => /^ {2}relay {12}/m.test(dev.output()), {
        timeoutMs: 90_000,
        message: "levelset dev's start to reach its relay's line",
      });
      assert.doesNotMatch(dev.output(), /Ctrl-C stops everything/, 'the start is still running');
    } finally {
      dev.interrupt();
    }
    const code = await dev.exited;
    // Every process of the group gone before the state directory is removed (t.after): a service
    // still stopping would write its traces there again.
    await dev.groupGone();
    const output = dev.output();
    assert.equal(code, 0, output);
    assert.match(output, /stopped\.\n$/);
    // What the stop interrupted fails, and that is no failure to start. (What the relay could not
    // publish before its stop deadline, under load, it logs as it does at any stop.)
    assert.doesNotMatch(output, /could not start/);
  });

  test('expected failures: no stack, emulator gone, cluster unreachable', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'levelset-cli-empty-'));
    const gone = mkdtempSync(join(tmpdir(), 'levelset-cli-gone-'));
    const unreachable = mkdtempSync(join(tmpdir(), 'levelset-cli-unreachable-'));
    try {
      assertOneLineFailure(
        await cli(['status'], { LEVELSET_STATE_DIR: empty }),
        1,
        /no local stack running .*levelset dev/,
      );
      // A command of the cluster alone says the same, not client-node's refusal of its fallback
      // (http://localhost:8080 when no kubeconfig exists).
      const conditions = await cli(['conditions', '-A'], {
        LEVELSET_STATE_DIR: empty,
        HOME: empty,
        KUBECONFIG: undefined,
        KUBERNETES_SERVICE_HOST: undefined,
      });
      assertOneLineFailure(conditions, 1, /no local stack running .*levelset dev.*set KUBECONFIG/);
      assert.doesNotMatch(conditions.stdout + conditions.stderr, /HTTP protocol/);

      const state = readStackState(stateDir) as StackState;
      writeStackState(gone, { ...state, emulatorHost: `127.0.0.1:${await freePort()}` });
      assertOneLineFailure(
        await cli(['dead-letters', 'list'], { LEVELSET_STATE_DIR: gone }),
        1,
        /local stack is not running \(its Pub\/Sub emulator at .* does not answer\)/,
      );

      const kubeconfig = join(unreachable, 'kubeconfig');
      const server = `http://127.0.0.1:${await freePort()}`;
      writeFileSync(
        kubeconfig,
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Config',
          clusters: [{ name: 'c', cluster: { server, 'insecure-skip-tls-verify': true } }],
          users: [{ name: 'u', user: {} }],
          contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
          'current-context': 'c',
        }),
      );
      writeStackState(unreachable, { ...state, kubeconfigPath: kubeconfig });
      assertOneLineFailure(
        await cli(['resync'], { LEVELSET_STATE_DIR: unreachable }),
        1,
        new RegExp(`cannot reach the Kubernetes API at ${server}`),
      );
      // A state directory of its own: `unreachable` holds a state file of a running process (this one),
      // which levelset dev refuses to start over.
      const dev = await cli(['dev', '--cluster', 'kubeconfig'], {
        KUBECONFIG: kubeconfig,
        LEVELSET_STATE_DIR: empty,
      });
      assert.equal(dev.code, 1);
      assert.match(dev.stdout, /levelset: could not start: no cluster answered in .*kubeconfig/);
      assert.doesNotMatch(dev.stdout + dev.stderr, /\n\s+at /);
    } finally {
      for (const dir of [empty, gone, unreachable]) rmSync(dir, { recursive: true, force: true });
    }
  });
});
