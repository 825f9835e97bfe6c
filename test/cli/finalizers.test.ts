/**
 * `levelset finalizers release`, run as the real binary against an API server (the local one, or
 * TEST_KUBECONFIG's cluster): it removes only the controller's finalizer, after `--yes` (refused
 * without it when stdin is no terminal), and writes one WARNING log line naming what it released.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { LABELS } from '../../core/log.ts';
import { finalizerName } from '../../functions/kit/finalizers.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { repoRoot } from '../../local/service.ts';

const exec = promisify(execFile);
const bin = join(
  repoRoot,
  (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin
    .levelset ?? 'missing',
);
const resource = { group: 'pubsub.levelset.dev', version: 'v1alpha1', plural: 'topics' };
const OTHER = 'example.com/other-party';

describe('levelset finalizers release', () => {
  let cluster: TestCluster;
  let namespace: string;
  let custom: CustomObjectsApi;
  let stateDir: string;
  // biome-ignore lint/suspicious/noExplicitAny: custom objects come back as plain JSON.
  const get = (name: string): Promise<any> =>
    custom.getNamespacedCustomObject({ ...resource, namespace, name });
  const levelset = (...args: string[]) =>
    exec(process.execPath, [bin, 'finalizers', 'release', ...args], {
      cwd: repoRoot,
      env: {
        ...process.env,
        KUBECONFIG: cluster.kubeconfigPath,
        LEVELSET_STATE_DIR: stateDir,
        USER: 'tester',
      },
    });

  before(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'levelset-state-')); // no local stack: KUBECONFIG's cluster
    cluster = await startTestCluster();
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    namespace = await cluster.createNamespace('finalizers-cli');
    await cluster.applyCrd(join(repoRoot, 'functions/controllers/topic/crd.yaml'), resource, namespace);
    await custom.createNamespacedCustomObject({
      ...resource,
      namespace,
      body: {
        apiVersion: 'pubsub.levelset.dev/v1alpha1',
        kind: 'Topic',
        metadata: { name: 'stuck', finalizers: [OTHER, finalizerName('topic')] },
        spec: {},
      },
    });
    await custom.deleteNamespacedCustomObject({ ...resource, namespace, name: 'stuck' });
  });
  after(async () => {
    await custom
      ?.patchNamespacedCustomObject(
        { ...resource, namespace, name: 'stuck', body: { metadata: { finalizers: null } } },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      )
      .catch(() => undefined);
    await cluster?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('refuses without --yes when stdin is not a terminal, and changes nothing', async () => {
    await assert.rejects(
      levelset('topic', `${namespace}/stuck`),
      (err: Error & { code: number; stderr: string }) => {
        assert.equal(err.code, 2);
        assert.equal(err.stderr, 'levelset: refusing without --yes: stdin is not a terminal\n');
        return true;
      },
    );
    assert.deepEqual((await get('stuck')).metadata.finalizers, [OTHER, finalizerName('topic')]);
  });

  it('releases only its own finalizer with --yes, and says so in a WARNING log line', async () => {
    const { stdout, stderr } = await levelset('topic', `${namespace}/stuck`, '--yes');
    assert.equal(stdout, `released levelset.dev/topic from Topic ${namespace}/stuck\n`);
    const line = JSON.parse(stderr.trim().split('\n').at(-1) ?? '{}');
    assert.equal(line.severity, 'WARNING');
    assert.equal(line.message, 'finalizer released by hand: finalize skipped');
    assert.deepEqual(line[LABELS], { controller: 'topic', key: `${namespace}/stuck` });
    assert.equal(line.finalizer, 'levelset.dev/topic');
    assert.equal(line.user, 'tester');
    assert.deepEqual((await get('stuck')).metadata.finalizers, [OTHER], "the other party's stays");
    const again = await levelset('topic', `${namespace}/stuck`, '--yes');
    assert.equal(
      again.stdout,
      `Topic ${namespace}/stuck does not carry levelset.dev/topic: nothing to release\n`,
    );
  });

  it('a malformed key, an unknown controller or a missing object is one line and a non-zero exit', async () => {
    for (const [args, code, message] of [
      [['topic', 'no-namespace', '--yes'], 2, /^levelset: malformed key "no-namespace"/],
      [['nope', 'a/b', '--yes'], 2, /^levelset: unknown controller "nope"/],
      [
        ['topic', `${namespace}/absent`, '--yes'],
        1,
        new RegExp(`^levelset: Topic ${namespace}/absent not found\\n$`),
      ],
    ] as const)
      await assert.rejects(levelset(...args), (err: Error & { code: number; stderr: string }) => {
        assert.equal(err.code, code, err.stderr);
        assert.match(err.stderr, message);
        return true;
      });
  });
});
