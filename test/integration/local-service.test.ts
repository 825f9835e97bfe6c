/**
 * local/service.ts: a service of the local stack is ready only once its own process listens on its
 * port. The port is chosen free and stays unbound until the child has imported its modules (seconds
 * on a busy machine); another process that binds it meanwhile must not be taken for the service
 * (the stack would push its keys to a stranger, and the child dies of EADDRINUSE unnoticed).
 * Real processes and sockets: the "service" is a Node child that serves its pid over HTTP. The
 * Pub/Sub emulator (a JVM) on a taken port fails at once, saying why. Every service, and a script
 * that relaunches itself for them (the soak), runs with glibc's malloc settings (ALLOCATOR_ENV).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { waitFor } from '../../functions/kit/wait.ts';
import { freePort, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import {
  ALLOCATOR_ENV,
  LOG_LINES_KEPT,
  type LogLine,
  onFreePort,
  PortInUseError,
  repoRoot,
  type Service,
  startService,
} from '../../local/service.ts';

/** Node arguments of a child that answers every request with its pid, on `port`. */
const pidServer = (port: number) => [
  '-e',
  `require('node:http').createServer((q, r) => r.end(String(process.pid))).listen(${port});`,
];

/** Another process's server, answering 200 to everything (`/readyz` too). */
async function foreignServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((_req, res) => res.end('not the service'));
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { server, port };
}

describe('local services: ready only when their own process listens', () => {
  let foreign: { server: Server; port: number };
  const started: Service[] = [];

  before(async () => {
    foreign = await foreignServer();
  });

  after(async () => {
    await Promise.all(started.map((s) => s.stop()));
    await new Promise((resolve) => foreign.server.close(resolve));
  });

  for (const readyPath of ['/readyz', undefined]) {
    it(`refuses a port another process holds (${readyPath ? 'readiness path' : 'port probe'})`, async () => {
      await assert.rejects(
        startService({ name: 'svc', args: pidServer(foreign.port), port: foreign.port, readyPath }),
        (err) => err instanceof PortInUseError && err.port === foreign.port,
      );
    });
  }

  it('refuses a port another process holds when the report is lost and the child only logs the error', async () => {
    // The child drops its IPC channel first, so the preload's report of the failed listen never
    // reaches the parent: the error the child logs before it exits must say it.
    await assert.rejects(
      startService({
        name: 'svc',
        args: [
          '-e',
          `process.disconnect(); require('node:http').createServer().on('error', (e) => { console.error(e.stack); process.exit(1); }).listen(${foreign.port});`,
        ],
        port: foreign.port,
        readyPath: '/readyz',
      }),
      (err) => err instanceof PortInUseError && err.port === foreign.port,
    );
  });

  it('is ready once its own process listens, and answers from it', async () => {
    const port = await freePort();
    const service = await startService({ name: 'svc', args: pidServer(port), port, readyPath: '/' });
    started.push(service);
    assert.equal(await (await fetch(service.url)).text(), String(service.pid));
  });

  it('the Pub/Sub emulator refuses a port another process holds', async () => {
    // Its main thread dies of a BindException while the JVM lives on: it never answers.
    const started = startPubSubEmulator({ port: foreign.port }).then(async (emulator) => {
      await emulator.stop(); // taken for the emulator: the foreign server answered
      return emulator;
    });
    await assert.rejects(started, /another process took the port/);
  });

  it('keeps its latest log lines only, and hands every line to onLog', async () => {
    const port = await freePort();
    const lines = 3 * LOG_LINES_KEPT + 7;
    const seen: LogLine[] = [];
    const service = await startService({
      name: 'svc',
      args: [
        '-e',
        `for (let i = 0; i < ${lines}; i++) console.log(JSON.stringify({ message: 'line ' + i })); require('node:http').createServer((q, r) => r.end()).listen(${port});`,
      ],
      port,
      onLog: (line) => seen.push(line),
    });
    started.push(service);
    await waitFor(() => seen.some((l) => l.message === `line ${lines - 1}`), {
      timeoutMs: 30_000,
      message: 'every line read',
    });
    assert.equal(seen.filter((l) => String(l.message).startsWith('line ')).length, lines);
    assert.ok(service.logs.length <= 2 * LOG_LINES_KEPT, `${service.logs.length} lines kept`);
    assert.ok(service.logs.length >= LOG_LINES_KEPT);
    assert.equal(service.logs.at(-1)?.message, `line ${lines - 1}`);
  });

  it('onFreePort moves a service whose port was taken to a fresh one', async () => {
    const service = await onFreePort(
      (port) => startService({ name: 'svc', args: pidServer(port), port }),
      foreign.port,
    );
    started.push(service);
    assert.notEqual(service.port, foreign.port);
    assert.equal(await (await fetch(service.url)).text(), String(service.pid));
  });
});

/** The environment of this process without glibc's malloc settings, with `extra`. */
function envWithout(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  for (const name of Object.keys(ALLOCATOR_ENV)) if (!(name in extra)) delete env[name];
  return env;
}

describe("local services: glibc's malloc settings", () => {
  const dir = mkdtempSync(join(tmpdir(), 'levelset-allocator-env-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  /** A script that relaunches itself with the settings and a V8 flag, then prints them and exits 7. */
  const script = join(dir, 'relaunch.ts');
  writeFileSync(
    script,
    `import { relaunchWithAllocatorEnv } from ${JSON.stringify(pathToFileURL(join(repoRoot, 'local', 'service.ts')).href)};
const relaunched = await relaunchWithAllocatorEnv(['--max-semi-space-size=8']);
if (relaunched !== undefined) process.exit(relaunched);
console.log(JSON.stringify({ pid: process.pid, ppid: process.ppid, execArgv: process.execArgv, env: Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('MALLOC_'))) }));
process.exit(7);
`,
  );
  const run = (env: NodeJS.ProcessEnv, flags: string[] = []) => {
    const r = spawnSync(process.execPath, [...flags, script], { env, encoding: 'utf8' });
    return {
      code: r.status,
      pid: r.pid,
      out: JSON.parse(r.stdout) as {
        pid: number;
        ppid: number;
        execArgv: string[];
        env: Record<string, string>;
      },
    };
  };

  it('a script started without them runs again as a child with them, and exits with its code', () => {
    const { code, pid, out } = run(envWithout());
    assert.equal(code, 7);
    assert.deepEqual(out.env, ALLOCATOR_ENV);
    assert.deepEqual(out.execArgv, ['--max-semi-space-size=8']);
    assert.equal(out.ppid, pid, 'the child printed');
  });

  it('a script started without its flag runs again with it, keeping its own flags', () => {
    const { code, pid, out } = run(envWithout(ALLOCATOR_ENV), ['--stack-size=900']);
    assert.equal(code, 7);
    assert.deepEqual(out.execArgv, ['--max-semi-space-size=8', '--stack-size=900']);
    assert.equal(out.ppid, pid, 'the child printed');
  });

  it('a script started with them runs as it is, and a variable or flag given wins', () => {
    const { code, pid, out } = run(envWithout({ ...ALLOCATOR_ENV, MALLOC_ARENA_MAX: '4' }), [
      '--max-semi-space-size=16',
    ]);
    assert.equal(code, 7);
    assert.deepEqual(out.env, { ...ALLOCATOR_ENV, MALLOC_ARENA_MAX: '4' });
    assert.deepEqual(out.execArgv, ['--max-semi-space-size=16']);
    assert.equal(out.pid, pid, 'not relaunched');
  });

  it('a service starts with them, one set in the environment winning', async () => {
    const port = await freePort();
    const service = await startService({
      name: 'svc',
      args: [
        '-e',
        `require('node:http').createServer((q, r) => r.end(JSON.stringify(Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('MALLOC_')))))).listen(${port});`,
      ],
      port,
      env: { MALLOC_TRIM_THRESHOLD_: '262144' },
    });
    try {
      const expected = {
        ...ALLOCATOR_ENV,
        ...Object.fromEntries(
          Object.keys(ALLOCATOR_ENV).flatMap((k) => (process.env[k] ? [[k, process.env[k]]] : [])),
        ),
        MALLOC_TRIM_THRESHOLD_: '262144',
      };
      assert.deepEqual(JSON.parse(await (await fetch(service.url)).text()), expected);
    } finally {
      await service.stop();
    }
  });
});
