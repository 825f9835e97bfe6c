/**
 * A TCP proxy between the stack's processes (the relay, the functions) and a server, for the faults
 * a server cannot be asked for: it forwards bytes and never reads them (TLS stays end to end, the
 * server's certificate and the client's credentials untouched), so it can only break connections,
 * refuse them and delay bytes, which is what a network between a controller and its server does.
 * Two users: the soak (soak/faults.ts), in front of a real API server (the local API server has its
 * own fault injector, @levelset/apiserver); and the local stack, in front of a Pub/Sub emulator
 * started again after a fault (local/stack.ts), on the first emulator's port.
 *
 *   const proxy = await startTcpProxy('10.0.0.1', 6443);
 *   proxy.resetAll();              // every open connection reset: watches and requests in flight
 *   proxy.refuse(true);            // new connections reset at once, until refuse(false)
 *   const undo = proxy.delay(1500); // every chunk from the server held 1.5 s more
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  /** The port it listens on, on 127.0.0.1. */
  port: number;
  /** Open connections (client side). */
  connections(): number;
  /** Resets every open connection (both sides); @returns how many */
  resetAll(): number;
  /** While on, every new connection is reset as soon as it is accepted. */
  refuse(on: boolean): void;
  /** Holds every chunk from the server `ms` before it is passed on; @returns the undo */
  delay(ms: number): () => void;
  /** Closes the listener and every connection. */
  stop(): Promise<void>;
}

/**
 * Resets `socket` (RST), or only destroys it when its writable side has ended (a client that
 * half-closed is ended back by Node, `allowHalfOpen` being off): libuv cannot reset a TCP handle
 * whose shutdown has started (`uv_tcp_close_reset` after `uv_shutdown` fails with EINVAL), and Node
 * then leaves the handle open, so the process spins forever in its exit's handle cleanup (a
 * clean-clone CI's load test hung so after the local stack's emulator restart, decision 82).
 */
export function resetConnection(socket: Socket): void {
  if (socket.writableEnded) socket.destroy();
  else socket.resetAndDestroy();
}

/**
 * Starts a proxy to `host:port` on 127.0.0.1, on `options.listenPort` (default: a free port).
 * @throws the listen error (`EADDRINUSE` for a `listenPort` taken)
 */
export async function startTcpProxy(
  host: string,
  port: number,
  options: { listenPort?: number } = {},
): Promise<TcpProxy> {
  const open = new Set<{ client: Socket; upstream: Socket }>();
  let refusing = false;
  let delayMs = 0;
  const server: Server = createServer((client) => {
    if (refusing) {
      resetConnection(client);
      return;
    }
    const upstream = connect({ host, port });
    const pair = { client, upstream };
    open.add(pair);
    const end = () => {
      open.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    // From the server: passed on at once, or each chunk after the delay (in order: a later chunk
    // never overtakes an earlier one, as the delay only grows a chunk's wait).
    let last = Promise.resolve();
    upstream.on('data', (chunk: Buffer) => {
      if (delayMs === 0 && open.has(pair)) {
        last = last.then(() => {
          if (!client.destroyed) client.write(chunk);
        });
        return;
      }
      const due = Date.now() + delayMs;
      last = last.then(
        () =>
          new Promise<void>((resolve) =>
            setTimeout(
              () => {
                if (!client.destroyed) client.write(chunk);
                resolve();
              },
              Math.max(0, due - Date.now()),
            ),
          ),
      );
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.listenPort ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('the proxy has no port');
  const resetAll = () => {
    const n = open.size;
    for (const { client, upstream } of [...open]) {
      resetConnection(client);
      upstream.destroy();
    }
    open.clear();
    return n;
  };
  return {
    port: address.port,
    connections: () => open.size,
    resetAll,
    refuse(on) {
      refusing = on;
    },
    delay(ms) {
      delayMs = ms;
      return () => {
        delayMs = 0;
      };
    },
    async stop() {
      resetAll();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
