/**
 * local/service.ts: a service of the local stack is ready only once its own process listens on its
 * port. The port is chosen free and stays unbound until the child has imported its modules (seconds
 * on a busy machine); another process that binds it meanwhile must not be taken for the service
 * (the stack would push its keys to a stranger, and the child dies of EADDRINUSE unnoticed).
 * Real processes and sockets: the "service" is a Node child that serves its pid over HTTP. The
 * Pub/Sub emulator (a JVM) on a taken port fails at once, saying why.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { waitFor } from '../../functions/kit/wait.ts';
import { freePort, startPubSubEmulator } from '../../local/pubsub-emulator.ts';
import {
  LOG_LINES_KEPT,
  type LogLine,
  onFreePort,
  PortInUseError,
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
