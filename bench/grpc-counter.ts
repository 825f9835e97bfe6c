/**
 * A counting HTTP/2 proxy in front of a gRPC server (the Pub/Sub emulator): every request (stream)
 * is forwarded unchanged, headers, messages and trailers, and counted by its `:path`
 * (`/google.pubsub.v1.Publisher/GetTopic`), so that the bench reports how many Pub/Sub requests a
 * reconcile makes, measured on the wire rather than inferred from the code.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';

export interface GrpcCounter {
  /** `host:port` to use as `PUBSUB_EMULATOR_HOST`. */
  host: string;
  /** Requests so far, by `:path`; cleared with `counts.clear()`. */
  counts: Map<string, number>;
  total(): number;
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set([':method', ':path', ':scheme', ':authority', 'connection', 'host']);

/** Starts the proxy on a free port in front of `target` (`host:port`). */
export async function startGrpcCounter(target: string): Promise<GrpcCounter> {
  const upstream = http2.connect(`http://${target}`);
  upstream.on('error', () => {});
  const counts = new Map<string, number>();
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    const path = String(headers[':path']);
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const forwarded: http2.OutgoingHttpHeaders = { ':method': headers[':method'], ':path': path };
    for (const [k, v] of Object.entries(headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) forwarded[k] = v;
    const request = upstream.request(forwarded);
    let trailers: http2.IncomingHttpHeaders = {};
    request.on('response', (h) => {
      const { ':status': status, ...rest } = h;
      // A trailers-only answer (an error: grpc-status in the headers) ends the stream at once.
      if ('grpc-status' in rest) stream.respond({ ':status': status, ...rest }, { endStream: true });
      else stream.respond({ ':status': status, ...rest }, { waitForTrailers: true });
    });
    request.on('trailers', (t) => {
      trailers = t;
    });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    stream.pipe(request);
    request.on('data', (chunk: Buffer) => {
      if (!stream.closed && stream.headersSent && !stream.writableEnded) stream.write(chunk);
    });
    request.on('end', () => {
      if (!stream.writableEnded && !stream.closed) stream.end();
    });
    request.on('error', () => stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    stream.on('error', () => request.close(http2.constants.NGHTTP2_CANCEL));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    counts,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    close: async () => {
      upstream.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
