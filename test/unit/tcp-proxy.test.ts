// The TCP proxy (local/tcp-proxy.ts), its connection faults for the soak on a real API server: bytes
// forwarded both ways untouched, every open connection reset, new ones refused, the server's bytes
// held back.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { freePort } from '../../local/pubsub-emulator.ts';
import { startTcpProxy, type TcpProxy } from '../../local/tcp-proxy.ts';

describe('the TCP proxy', () => {
  let echo: Server;
  let proxy: TcpProxy;
  const sockets: Socket[] = [];
  before(async () => {
    echo = createServer((s) => {
      sockets.push(s);
      s.on('error', () => undefined);
      s.pipe(s);
    });
    echo.listen(0, '127.0.0.1');
    await once(echo, 'listening');
    proxy = await startTcpProxy('127.0.0.1', (echo.address() as { port: number }).port);
  });
  after(async () => {
    await proxy.stop();
    for (const s of sockets) s.destroy();
    await new Promise((r) => echo.close(r));
  });

  /** A connection through the proxy, its received text, and how it ended. */
  const client = async () => {
    const socket = connect(proxy.port, '127.0.0.1');
    let text = '';
    socket.on('data', (d: Buffer) => {
      text += d.toString();
    });
    const ended = new Promise<string>((resolve) => {
      socket.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? 'error'));
      socket.on('close', () => resolve('closed'));
    });
    await once(socket, 'connect');
    return { socket, text: () => text, ended };
  };
  /** Waits until `check` holds, 5 s at most. */
  const until = async (check: () => boolean, what: string) => {
    const deadline = Date.now() + 5_000;
    while (!check()) {
      assert.ok(Date.now() < deadline, `not in 5 s: ${what}`);
      await new Promise((r) => setImmediate(r));
    }
  };

  it('forwards bytes both ways, and resets every open connection', async () => {
    const c = await client();
    c.socket.write('hello');
    await until(() => c.text() === 'hello', 'the echo');
    await until(() => proxy.connections() === 1, 'one connection');
    assert.equal(proxy.resetAll(), 1);
    assert.equal(await c.ended, 'ECONNRESET');
  });

  it('refuses new connections while refusing, and takes them again after', async () => {
    proxy.refuse(true);
    const socket = connect(proxy.port, '127.0.0.1');
    const [err] = (await once(socket, 'error')) as [NodeJS.ErrnoException];
    assert.equal(err.code, 'ECONNRESET');
    proxy.refuse(false);
    const c = await client();
    c.socket.write('again');
    await until(() => c.text() === 'again', 'the echo after the refusal');
    c.socket.destroy();
  });

  it('listens on the port it is given, and refuses it when taken', async () => {
    const port = await freePort();
    const own = await startTcpProxy('127.0.0.1', (echo.address() as { port: number }).port, {
      listenPort: port,
    });
    try {
      assert.equal(own.port, port);
      const socket = connect(port, '127.0.0.1');
      await once(socket, 'connect');
      socket.write('on its port');
      const [echoed] = (await once(socket, 'data')) as [Buffer];
      assert.equal(echoed.toString(), 'on its port');
      socket.destroy();
      await assert.rejects(
        startTcpProxy('127.0.0.1', 1, { listenPort: port }),
        (err: NodeJS.ErrnoException) => err.code === 'EADDRINUSE',
      );
    } finally {
      await own.stop();
    }
  });

  it('closes, without hanging its process, a connection it ended before the reset (resetConnection)', async () => {
    // In a process of its own: a reset of a socket already ended leaves its handle open, and the
    // process then never exits (Node's exit spins on it). As the proxy's side of a client that
    // half-closed: ended by Node, then reset by resetAll.
    const script = `
      import { once } from 'node:events';
      import { connect, createServer } from 'node:net';
      import { resetConnection } from ${JSON.stringify(new URL('../../local/tcp-proxy.ts', import.meta.url).href)};
      const server = createServer();
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      const socket = connect(server.address().port, '127.0.0.1').on('error', () => {});
      const [served] = await once(server, 'connection');
      served.on('error', () => {}).end();
      resetConnection(served);
      await once(socket, 'close');
      server.close();
      console.log(served.destroyed);
    `;
    const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], {
      timeout: 20_000,
    });
    assert.equal(stdout.trim(), 'true');
  });

  it("holds the server's bytes back while delaying, in order", async () => {
    const c = await client();
    const undo = proxy.delay(300);
    const sent = Date.now();
    c.socket.write('a');
    c.socket.write('b');
    await until(() => c.text() === 'ab', 'the delayed echo');
    assert.ok(Date.now() - sent >= 290, `echoed after ${Date.now() - sent} ms`);
    undo();
    c.socket.write('c');
    await until(() => c.text() === 'abc', 'the echo after the delay');
    c.socket.destroy();
  });
});
