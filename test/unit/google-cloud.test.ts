// The kit sorts Google Cloud errors as it sorts Kubernetes API errors: what no retry fixes is a
// TerminalError (reason from the gRPC code, message from the API), the rest is rethrown (retried).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PubSub } from '@google-cloud/pubsub';
import { isTransient } from '../../core/k8s/errors.ts';
import {
  GRPC,
  googleCloudClientOptions,
  throwGoogleCloudError,
  withStatusDetails,
} from '../../functions/kit/google-cloud.ts';
import { TerminalError } from '../../functions/kit/index.ts';
import { rateLimitOf } from '../../functions/kit/rate-limits.ts';
import { startGrpcProxy } from '../../local/grpc-proxy.ts';

/** An error as google-gax throws it: `code` (google.rpc.Code), `details` (the API's message). */
const grpcError = (code: number, details: string) =>
  Object.assign(new Error(`${code} ${details}`), { code, details, metadata: {} });

describe('throwGoogleCloudError', () => {
  for (const [code, reason] of [
    [GRPC.PERMISSION_DENIED, 'PermissionDenied'],
    [GRPC.INVALID_ARGUMENT, 'InvalidArgument'],
    [GRPC.FAILED_PRECONDITION, 'FailedPrecondition'],
  ] as const) {
    it(`code ${code} is terminal: ${reason}, with the API's message`, () => {
      const err = grpcError(code, 'User not authorized to perform this action.');
      assert.throws(
        () => throwGoogleCloudError(err, 'create projects/p/topics/t'),
        (thrown: unknown) =>
          thrown instanceof TerminalError &&
          thrown.reason === reason &&
          thrown.message === 'create projects/p/topics/t: User not authorized to perform this action.' &&
          thrown.cause === err &&
          !isTransient(thrown),
      );
    });
  }
  // RESOURCE_EXHAUSTED (quota) clears by itself: the kit requeues it after its delay (rate-limits.ts).
  for (const code of [GRPC.UNAVAILABLE, GRPC.DEADLINE_EXCEEDED, GRPC.NOT_FOUND, GRPC.RESOURCE_EXHAUSTED]) {
    it(`code ${code} is rethrown unchanged, and retried`, () => {
      const err = grpcError(code, 'try again');
      assert.throws(
        () => throwGoogleCloudError(err, 'x'),
        (thrown: unknown) => thrown === err && isTransient(thrown),
      );
    });
  }
  it('an error without a gRPC code (a network error) is rethrown', () => {
    const err = new Error('socket hang up');
    assert.throws(
      () => throwGoogleCloudError(err, 'x'),
      (thrown: unknown) => thrown === err,
    );
  });
});

describe('withStatusDetails', () => {
  it("decodes a RESOURCE_EXHAUSTED's RetryInfo that the Pub/Sub client leaves in the metadata, so its delay is read", async () => {
    // The proxy answers as Google's APIs answer a quota error; nothing behind it is reached.
    const proxy = await startGrpcProxy('127.0.0.1:9');
    proxy.fail({ path: /\/GetTopic$/, code: GRPC.RESOURCE_EXHAUSTED, message: 'quota', retryDelayMs: 2500 });
    const pubsub = new PubSub({ projectId: 'p', ...googleCloudClientOptions(proxy.host) });
    try {
      const err = await pubsub
        .topic('t')
        .getMetadata()
        .then(
          () => assert.fail('answered'),
          (e: unknown) => e,
        );
      assert.equal(
        (err as { statusDetails?: unknown }).statusDetails,
        undefined,
        'left encoded by the client',
      );
      assert.deepEqual(rateLimitOf(await withStatusDetails(err)), { retryAfterMs: 2500 });
      const plain = grpcError(GRPC.RESOURCE_EXHAUSTED, 'quota');
      assert.equal(await withStatusDetails(plain), plain, 'an error without details unchanged');
    } finally {
      await pubsub.close();
      await proxy.close();
    }
  });
});
