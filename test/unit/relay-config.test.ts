// The relay's environment configuration and metadata cut-down.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resourcePath } from '../../core/k8s/rest.ts';
import { deployments, namespaces, secrets } from '../../functions/kit/resources.ts';
import { ConfigError, loadRelayConfig } from '../../relay/config.ts';
import { LAST_APPLIED_ANNOTATION, resourceName, stripToMetadata } from '../../relay/metadata.ts';

describe('loadRelayConfig', () => {
  it('applies the defaults, with local-project when the emulator is used', () => {
    assert.deepEqual(loadRelayConfig({ PUBSUB_EMULATOR_HOST: '127.0.0.1:8085' }), {
      kubeconfig: undefined,
      cluster: 'default',
      projectId: 'local-project',
      emulatorHost: '127.0.0.1:8085',
      topic: 'levelset-keys',
      collapseMs: 250,
      port: 8080,
      watchSilenceTimeoutMs: 90_000,
      retryBufferKeys: 10_000,
      publishTimeoutMs: 30_000,
      maxInFlight: 1000,
      logLevel: 'info',
    });
  });

  it('reads every variable', () => {
    assert.deepEqual(
      loadRelayConfig({
        KUBECONFIG: '/k/config',
        RELAY_CLUSTER: 'gke-eu',
        GOOGLE_CLOUD_PROJECT: 'my-project-1',
        LEVELSET_TOPIC: 'keys-2',
        RELAY_COLLAPSE_MS: '0',
        RELAY_PORT: '9090',
        RELAY_WATCH_SILENCE_TIMEOUT_MS: '5000',
        RELAY_RETRY_BUFFER_KEYS: '50',
        RELAY_PUBLISH_TIMEOUT_MS: '2000',
        RELAY_MAX_IN_FLIGHT: '100',
        LOG_LEVEL: 'debug',
      }),
      {
        kubeconfig: '/k/config',
        cluster: 'gke-eu',
        projectId: 'my-project-1',
        emulatorHost: undefined,
        topic: 'keys-2',
        collapseMs: 0,
        port: 9090,
        watchSilenceTimeoutMs: 5000,
        retryBufferKeys: 50,
        publishTimeoutMs: 2000,
        maxInFlight: 100,
        logLevel: 'debug',
      },
    );
  });

  it('refuses a cluster id that is not a DNS-1123 label', () => {
    assert.throws(
      () => loadRelayConfig({ PUBSUB_EMULATOR_HOST: 'h:1', RELAY_CLUSTER: 'GKE_eu' }),
      (err: Error) => err instanceof ConfigError && /RELAY_CLUSTER/.test(err.message),
    );
  });

  it('treats empty variables as unset', () => {
    assert.equal(
      loadRelayConfig({ PUBSUB_EMULATOR_HOST: 'h:1', RELAY_PORT: '', LEVELSET_TOPIC: '' }).port,
      8080,
    );
  });

  it('requires a project off the emulator', () => {
    assert.throws(
      () => loadRelayConfig({}),
      (err: Error) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, /GOOGLE_CLOUD_PROJECT: required/);
        return true;
      },
    );
  });

  it('names every bad variable in one error', () => {
    assert.throws(
      () =>
        loadRelayConfig({
          GOOGLE_CLOUD_PROJECT: 'p-1234',
          RELAY_COLLAPSE_MS: 'soon',
          RELAY_PORT: '70000',
          LOG_LEVEL: 'loud',
          LEVELSET_TOPIC: 'goog-keys',
          RELAY_MAX_IN_FLIGHT: '0',
        }),
      (err: Error) => {
        for (const name of [
          'RELAY_COLLAPSE_MS',
          'RELAY_PORT',
          'LOG_LEVEL',
          'LEVELSET_TOPIC',
          'RELAY_MAX_IN_FLIGHT',
        ]) {
          assert.match(err.message, new RegExp(`${name}: `));
        }
        return true;
      },
    );
  });
});

describe('metadata', () => {
  it('builds collection paths and names', () => {
    assert.equal(resourcePath(secrets, undefined), '/api/v1/secrets');
    assert.equal(resourcePath(deployments, 'team-a'), '/apis/apps/v1/namespaces/team-a/deployments');
    assert.equal(resourcePath(namespaces, 'ignored'), '/api/v1/namespaces');
    assert.equal(resourceName(deployments), 'apps/v1/deployments');
  });

  it("keeps only metadata: never a Secret body, managedFields' fieldsV1 or the last-applied copy", () => {
    const secret = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'db',
        namespace: 'team-a',
        resourceVersion: '3',
        labels: { a: 'b' },
        annotations: { [LAST_APPLIED_ANNOTATION]: '{"data":{"password":"c2VjcmV0"}}', keep: 'me' },
        managedFields: [
          {
            manager: 'kubectl',
            operation: 'Update',
            time: new Date('2026-01-01T00:00:00Z'),
            fieldsType: 'FieldsV1',
            fieldsV1: { 'f:data': { 'f:password': {} } },
          },
          { manager: 'levelset', operation: 'Apply', subresource: 'status', fieldsV1: {} },
        ],
      },
      data: { password: 'c2VjcmV0' },
      stringData: { password: 'secret' },
      type: 'Opaque',
    };
    const stripped = stripToMetadata(secret, secrets);
    assert.deepEqual(stripped, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'db',
        namespace: 'team-a',
        resourceVersion: '3',
        labels: { a: 'b' },
        annotations: { keep: 'me' },
        // Who wrote it and when, for the predicates of the event (the informer caches it without).
        managedFields: [
          { manager: 'kubectl', operation: 'Update', time: new Date('2026-01-01T00:00:00Z') },
          { manager: 'levelset', operation: 'Apply', subresource: 'status' },
        ],
      },
    });
    assert.doesNotMatch(JSON.stringify(stripped), /c2VjcmV0|secret"|password/);
    // The input is not modified.
    assert.ok(secret.metadata.annotations[LAST_APPLIED_ANNOTATION]);
  });

  it("gives a PartialObjectMetadata its resource's apiVersion and kind", () => {
    const partial = { apiVersion: 'meta.k8s.io/v1', kind: 'PartialObjectMetadata', metadata: { name: 'd' } };
    assert.deepEqual(stripToMetadata(partial, deployments), {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'd' },
    });
  });
});
