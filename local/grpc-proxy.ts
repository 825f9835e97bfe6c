/**
 * An HTTP/2 proxy in front of a gRPC server (the Pub/Sub emulator), shared by the bench and the
 * tests: every request (stream) is forwarded unchanged — headers, messages, trailers — and counted
 * by its `:path` (`/google.pubsub.v1.Publisher/GetTopic`), its messages kept on request (`record`);
 * and, for fault injection, a request whose
 * path matches a rule is answered with that rule's gRPC status instead, as Google Cloud answers an
 * error: a trailers-only response (HTTP 200, `content-type: application/grpc`, `grpc-status`,
 * percent-encoded `grpc-message`; gRPC over HTTP/2, "Responses"). It stands in for what the emulator
 * never answers: PERMISSION_DENIED, RESOURCE_EXHAUSTED, UNAVAILABLE, DEADLINE_EXCEEDED. A fault may
 * carry a `google.rpc.RetryInfo` detail, as Google's APIs attach one to a quota error: the whole
 * `google.rpc.Status` in the binary metadata `grpc-status-details-bin`, which google-gax decodes into
 * the error's `statusDetails` (Google's API design guide, "Errors: error details").
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import protobuf from 'protobufjs';

/** `google.rpc.Status` with its `RetryInfo` detail (google/rpc/status.proto, error_details.proto), encoded with protobufjs. */
const rpc = protobuf.parse(`
  syntax = "proto3";
  package google.rpc;
  message Any { string type_url = 1; bytes value = 2; }
  message Duration { int64 seconds = 1; int32 nanos = 2; }
  message RetryInfo { Duration retry_delay = 1; }
  message Status { int32 code = 1; string message = 2; repeated Any details = 3; }
`).root;

/** The `grpc-status-details-bin` value of status `code` with a RetryInfo of `retryDelayMs` (base64, as HTTP/2 carries binary metadata). */
function statusDetailsWithRetryInfo(code: number, message: string, retryDelayMs: number): string {
  const [RetryInfo, Status] = [rpc.lookupType('google.rpc.RetryInfo'), rpc.lookupType('google.rpc.Status')];
  const retryDelay = { seconds: Math.floor(retryDelayMs / 1000), nanos: (retryDelayMs % 1000) * 1e6 };
  const value = RetryInfo.encode(RetryInfo.fromObject({ retryDelay })).finish();
  const status = Status.fromObject({
    code,
    message,
    details: [{ typeUrl: 'type.googleapis.com/google.rpc.RetryInfo', value }],
  });
  return Buffer.from(Status.encode(status).finish()).toString('base64');
}

/** A fault: answer requests whose `:path` matches `path` with gRPC status `code`, `times` times. */
export interface GrpcFault {
  path: RegExp;
  /** Canonical gRPC code (google.rpc.Code), e.g. 7 PERMISSION_DENIED. */
  code: number;
  message: string;
  /** How many matching requests fail; default every one until removed. */
  times?: number;
  /** Attach a `google.rpc.RetryInfo` asking to retry after this long, ms (whole ms). */
  retryDelayMs?: number;
}

export interface GrpcProxy {
  /** `host:port` to use as `PUBSUB_EMULATOR_HOST`. */
  host: string;
  /** Requests so far, by `:path`; cleared with `counts.clear()`. */
  counts: Map<string, number>;
  total(): number;
  /** Adds a fault; returns its remover. */
  fail(fault: GrpcFault): () => void;
  /** Requests answered with a fault so far, by `:path`. */
  failed: Map<string, number>;
  /**
   * Keeps the request messages of every request whose `:path` matches `path` (forwarded or
   * faulted), in arrival order, each without its 5-byte gRPC frame prefix (decode it with the
   * API's protos, e.g. `google.pubsub.v1.UpdateTopicRequest.decode`); `stop()` stops keeping.
   */
  record(path: RegExp): { requests: RecordedRequest[]; stop(): void };
  close(): Promise<void>;
}

/** A request kept by {@link GrpcProxy.record}: its `:path` and its (uncompressed) message. */
export interface RecordedRequest {
  path: string;
  message: Buffer;
}

/** The messages of a gRPC request body: length-prefixed frames (gRPC over HTTP/2, "Requests"). */
function framesOf(body: Buffer): Buffer[] {
  const messages: Buffer[] = [];
  for (let at = 0; at + 5 <= body.length; ) {
    const length = body.readUInt32BE(at + 1);
    messages.push(body.subarray(at + 5, at + 5 + length));
    at += 5 + length;
  }
  return messages;
}

const HOP_BY_HOP = new Set([':method', ':path', ':scheme', ':authority', 'connection', 'host']);

/**
 * Starts the proxy on a free port in front of `target` (`host:port`, or a function giving it at the
 * first request: a server started after the proxy, e.g. the local stack's emulator).
 */
export async function startGrpcProxy(target: string | (() => string)): Promise<GrpcProxy> {
  let session: http2.ClientHttp2Session | undefined;
  const upstream = () => {
    if (!session || session.closed || session.destroyed) {
      session = http2.connect(`http://${typeof target === 'string' ? target : target()}`);
      session.on('error', () => {});
    }
    return session;
  };
  const counts = new Map<string, number>();
  const failed = new Map<string, number>();
  const faults = new Set<GrpcFault & { left: number }>();
  const recorders = new Set<{ path: RegExp; requests: RecordedRequest[] }>();
  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    const path = String(headers[':path']);
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const recording = [...recorders].filter((r) => r.path.test(path));
    if (recording.length > 0) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        for (const message of framesOf(Buffer.concat(chunks)))
          for (const r of recording) r.requests.push({ path, message });
      });
    }
    const fault = [...faults].find((f) => f.path.test(path));
    if (fault) {
      fault.left -= 1;
      if (fault.left <= 0) faults.delete(fault);
      failed.set(path, (failed.get(path) ?? 0) + 1);
      stream.resume(); // the request's messages are read and dropped
      stream.respond(
        {
          ':status': 200,
          'content-type': 'application/grpc',
          'grpc-status': String(fault.code),
          'grpc-message': encodeURIComponent(fault.message),
          ...(fault.retryDelayMs !== undefined
            ? {
                'grpc-status-details-bin': statusDetailsWithRetryInfo(
                  fault.code,
                  fault.message,
                  fault.retryDelayMs,
                ),
              }
            : {}),
        },
        { endStream: true },
      );
      return;
    }
    const forwarded: http2.OutgoingHttpHeaders = { ':method': headers[':method'], ':path': path };
    for (const [k, v] of Object.entries(headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) forwarded[k] = v;
    const request = upstream().request(forwarded);
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
    failed,
    fail(fault) {
      const entry = { ...fault, left: fault.times ?? Number.POSITIVE_INFINITY };
      faults.add(entry);
      return () => faults.delete(entry);
    },
    record(path) {
      const recorder = { path, requests: [] as RecordedRequest[] };
      recorders.add(recorder);
      return { requests: recorder.requests, stop: () => recorders.delete(recorder) };
    },
    close: async () => {
      session?.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
