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
 *
 * One model, opt-in ({@link GrpcProxyOptions.topicLabels}), of what Pub/Sub does and the emulator
 * refuses: label updates of topics (the emulator answers every `UpdateTopic` whose `update_mask`
 * names `labels` with INVALID_ARGUMENT, `labels is not a known Topic field`). What it models, from
 * Pub/Sub's API reference for `Publisher.UpdateTopic` and the `Topic` message:
 * - `UpdateTopic` with `labels` among its `update_mask.paths` sets the topic's labels to the
 *   request's, the whole map replaced (an empty map clears them), and answers the updated `Topic`;
 *   a topic that does not exist is NOT_FOUND. The existence check is the emulator's (a `GetTopic`
 *   the proxy sends), and the mask's other paths, if any, are forwarded to the emulator in an
 *   `UpdateTopic` without `labels` (so it validates and applies them, and answers its errors).
 * - The labels so set are kept in an overlay by topic name and replace the emulator's in every
 *   `Topic` answered to `GetTopic`, `UpdateTopic` and `ListTopics`; a `CreateTopic` or `DeleteTopic`
 *   through the proxy, or a `GetTopic` answered NOT_FOUND, ends the overlay's entry (a new topic has
 *   the labels it was created with). A topic deleted and created again past the proxy keeps stale
 *   labels until one of those: the overlay sees only what goes through the proxy.
 * Not modelled: the label rules Pub/Sub validates (key and value syntax, 64 labels), subscriptions'
 * labels, compressed messages (the Pub/Sub client sends none; such a request is forwarded as is).
 * Requests answered by the model, or whose answer it rewrote, are counted in `modelled` and marked
 * `modelled` in the records; the model's own calls to the emulator are not counted.
 */
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import protos from '@google-cloud/pubsub/build/protos/protos.js';
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

/** Pub/Sub's messages (google/pubsub/v1/pubsub.proto, as the Pub/Sub client ships them). */
const pubsub = protos.google.pubsub.v1;
const PUBLISHER = '/google.pubsub.v1.Publisher/';
/** The Publisher methods the topic labels model reads or answers: each a unary call. */
const TOPIC_METHODS = new Set(['GetTopic', 'UpdateTopic', 'ListTopics', 'CreateTopic', 'DeleteTopic']);
const OK = 0;
const NOT_FOUND = 5;
const INTERNAL = 13;

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

export interface GrpcProxyOptions {
  /**
   * Model label updates of topics, which Pub/Sub accepts and the emulator refuses (the module
   * comment says what exactly, and its source); default off: every request forwarded as it is.
   */
  topicLabels?: boolean;
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
   * Whether label updates of topics are modelled now ({@link GrpcProxyOptions.topicLabels});
   * set `false` to forward them to the emulator again (the labels already set stay in the overlay,
   * unused until it is set back to `true`).
   */
  topicLabels: boolean;
  /** Requests answered by the topic labels model, or whose answer it rewrote, so far, by `:path`. */
  modelled: Map<string, number>;
  /**
   * Keeps the request messages of every request whose `:path` matches `path` (forwarded, faulted
   * or modelled), in arrival order, each without its 5-byte gRPC frame prefix (decode it with the
   * API's protos, e.g. `google.pubsub.v1.UpdateTopicRequest.decode`); `stop()` stops keeping.
   */
  record(path: RegExp): { requests: RecordedRequest[]; stop(): void };
  close(): Promise<void>;
}

/** A request kept by {@link GrpcProxy.record}: its `:path` and its (uncompressed) message. */
export interface RecordedRequest {
  path: string;
  message: Buffer;
  /** Answered by the topic labels model, or its answer rewritten by it (set once that is known). */
  modelled?: true;
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

/** One message as a gRPC body: an uncompressed length-prefixed frame (gRPC over HTTP/2, "Length-Prefixed-Message"). */
function frame(message: Uint8Array): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** Whether a unary body's one message is compressed (its frame's flag: gRPC over HTTP/2, "Compressed-Flag"). */
const compressed = (body: Buffer) => body.length > 0 && body[0] !== 0;

/** A unary gRPC answer: its HTTP/2 headers, body (framed messages) and trailers. */
interface Answer {
  headers: http2.OutgoingHttpHeaders;
  body: Buffer;
  trailers: http2.IncomingHttpHeaders;
}

/** The grpc-status of an answer: its trailers', or its headers' when it is trailers-only. */
const statusOf = (a: Answer) => Number(a.trailers['grpc-status'] ?? a.headers['grpc-status'] ?? INTERNAL);

/** Sends one unary request (`headers`, the framed `body`) on `session` and reads its whole answer. */
function exchange(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body: Buffer) {
  return new Promise<Answer>((resolve, reject) => {
    const request = session.request(headers);
    const answer: Answer = { headers: {}, body: Buffer.alloc(0), trailers: {} };
    const chunks: Buffer[] = [];
    request.on('response', (h) => {
      answer.headers = h;
    });
    request.on('trailers', (t) => {
      answer.trailers = t;
    });
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve({ ...answer, body: Buffer.concat(chunks) }));
    request.on('error', reject);
    request.end(body);
  });
}

/** A gRPC error as one trailers-only response (gRPC over HTTP/2, "Responses"). */
function statusHeaders(code: number, message: string): http2.OutgoingHttpHeaders {
  return {
    ':status': 200,
    'content-type': 'application/grpc',
    'grpc-status': String(code),
    'grpc-message': encodeURIComponent(message),
  };
}

/** Answers `stream` with `answer`: trailers-only when its headers carry the status. */
function reply(stream: http2.ServerHttp2Stream, answer: Answer): void {
  if (stream.closed || stream.destroyed) return;
  if ('grpc-status' in answer.headers) {
    stream.respond(answer.headers, { endStream: true });
    return;
  }
  stream.respond(answer.headers, { waitForTrailers: true });
  stream.on('wantTrailers', () => stream.sendTrailers(answer.trailers));
  stream.end(answer.body);
}

const HOP_BY_HOP = new Set([':method', ':path', ':scheme', ':authority', 'connection', 'host']);

/**
 * Starts the proxy on a free port in front of `target` (`host:port`, or a function giving it at the
 * first request: a server started after the proxy, e.g. the local stack's emulator).
 */
export async function startGrpcProxy(
  target: string | (() => string),
  options: GrpcProxyOptions = {},
): Promise<GrpcProxy> {
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
  const modelled = new Map<string, number>();
  const faults = new Set<GrpcFault & { left: number }>();
  const recorders = new Set<{ path: RegExp; requests: RecordedRequest[] }>();
  /** The topic labels model's overlay: labels by topic name (`projects/p/topics/t`). */
  const overlay = new Map<string, Record<string, string>>();

  /** A unary call of the model's own to the emulator (Publisher `method`, `request` encoded). */
  const call = (method: string, request: Uint8Array) =>
    exchange(
      upstream(),
      {
        ':method': 'POST',
        ':path': `${PUBLISHER}${method}`,
        'content-type': 'application/grpc',
        te: 'trailers',
      },
      frame(request),
    );
  /** `answer` with its one Topic's labels from the overlay, if it has the topic; else `undefined`. */
  const relabelled = (answer: Answer): Answer | undefined => {
    const topic = pubsub.Topic.decode(framesOf(answer.body)[0] ?? Buffer.alloc(0));
    const labels = overlay.get(topic.name);
    if (labels === undefined) return undefined;
    topic.labels = { ...labels };
    return { ...answer, body: frame(pubsub.Topic.encode(topic).finish()) };
  };
  /** UpdateTopic with `labels` in its mask, as Pub/Sub answers it (the module comment). */
  const updateTopicLabels = async (
    request: InstanceType<typeof pubsub.UpdateTopicRequest>,
  ): Promise<Answer> => {
    const name = request.topic?.name ?? '';
    const labels = { ...request.topic?.labels };
    const rest = (request.updateMask?.paths ?? []).filter((p) => p !== 'labels');
    const answer =
      rest.length > 0
        ? await call(
            'UpdateTopic',
            pubsub.UpdateTopicRequest.encode({
              topic: { ...request.topic, labels: {} },
              updateMask: { paths: rest },
            }).finish(),
          )
        : await call('GetTopic', pubsub.GetTopicRequest.encode({ topic: name }).finish());
    if (statusOf(answer) !== OK) return answer; // NOT_FOUND, or the emulator's error for the rest
    overlay.set(name, labels);
    return relabelled(answer) ?? answer;
  };
  /**
   * A Publisher topic call under the model: answered by it (UpdateTopic of `labels`), or forwarded,
   * its answer relabelled from the overlay and the overlay kept up to date; `modelled` when the
   * model answered it or changed its answer.
   */
  const topicCall = async (
    method: string,
    headers: http2.OutgoingHttpHeaders,
    body: Buffer,
  ): Promise<{ answer: Answer; modelled: boolean }> => {
    const [message = Buffer.alloc(0)] = framesOf(body);
    if (method === 'UpdateTopic') {
      const request = pubsub.UpdateTopicRequest.decode(message);
      if (request.updateMask?.paths?.includes('labels'))
        return { answer: await updateTopicLabels(request), modelled: true };
    }
    const answer = await exchange(upstream(), headers, body);
    const status = statusOf(answer);
    if (compressed(answer.body)) return { answer, modelled: false };
    if (method === 'GetTopic' && status === NOT_FOUND)
      overlay.delete(pubsub.GetTopicRequest.decode(message).topic);
    if (status !== OK) return { answer, modelled: false };
    if (method === 'CreateTopic') overlay.delete(pubsub.Topic.decode(message).name);
    if (method === 'DeleteTopic') overlay.delete(pubsub.DeleteTopicRequest.decode(message).topic);
    if (method === 'GetTopic' || method === 'UpdateTopic') {
      const changed = relabelled(answer);
      return { answer: changed ?? answer, modelled: changed !== undefined };
    }
    if (method === 'ListTopics') {
      const list = pubsub.ListTopicsResponse.decode(framesOf(answer.body)[0] ?? Buffer.alloc(0));
      const inOverlay = list.topics.filter((t) => overlay.has(t.name ?? ''));
      for (const t of inOverlay) t.labels = { ...overlay.get(t.name ?? '') };
      if (inOverlay.length > 0)
        return {
          answer: { ...answer, body: frame(pubsub.ListTopicsResponse.encode(list).finish()) },
          modelled: true,
        };
    }
    return { answer, modelled: false };
  };

  const proxy: GrpcProxy = {
    host: '',
    counts,
    total: () => [...counts.values()].reduce((a, b) => a + b, 0),
    failed,
    topicLabels: options.topicLabels ?? false,
    modelled,
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

  const server = http2.createServer();
  server.on('stream', (stream, headers) => {
    const path = String(headers[':path']);
    counts.set(path, (counts.get(path) ?? 0) + 1);
    const method = path.startsWith(PUBLISHER) ? path.slice(PUBLISHER.length) : '';
    const modelling = proxy.topicLabels && TOPIC_METHODS.has(method);
    const recording = [...recorders].filter((r) => r.path.test(path));
    // The request's whole body, read when it is kept or the model reads it (a unary call's is one message).
    let body: Promise<{ bytes: Buffer; kept: RecordedRequest[] }> | undefined;
    if (recording.length > 0 || modelling)
      body = new Promise((resolve) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const bytes = Buffer.concat(chunks);
          const kept = framesOf(bytes).map((message): RecordedRequest => ({ path, message }));
          for (const r of recording) r.requests.push(...kept);
          resolve({ bytes, kept });
        });
      });
    const fault = [...faults].find((f) => f.path.test(path));
    if (fault) {
      fault.left -= 1;
      if (fault.left <= 0) faults.delete(fault);
      failed.set(path, (failed.get(path) ?? 0) + 1);
      stream.resume(); // the request's messages are read and dropped
      stream.respond(
        {
          ...statusHeaders(fault.code, fault.message),
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
    if (modelling && body) {
      stream.on('error', () => {}); // the client went away: nothing to answer
      body
        .then(async ({ bytes, kept }) => {
          if (compressed(bytes)) return exchange(upstream(), forwarded, bytes);
          const { answer, modelled: byModel } = await topicCall(method, forwarded, bytes);
          if (byModel) {
            modelled.set(path, (modelled.get(path) ?? 0) + 1);
            for (const r of kept) r.modelled = true;
          }
          return answer;
        })
        .then(
          (answer) => reply(stream, answer),
          (err: unknown) =>
            reply(stream, {
              headers: statusHeaders(INTERNAL, `grpc-proxy: ${(err as Error).message}`),
              body: Buffer.alloc(0),
              trailers: {},
            }),
        );
      return;
    }
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
  proxy.host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  return proxy;
}
