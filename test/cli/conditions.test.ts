/**
 * `levelset conditions`, run as the real binary against an API server (the local one, or
 * TEST_KUBECONFIG's cluster): it lists the objects whose `Ready` is not `True` (False, absent, or
 * True for an older generation) with reason, message, generation lag and age, exits 1 when any and
 * 0 when none, and 2 on a usage error.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { metaTime } from '../../core/k8s/conditions.ts';
import { startTestCluster, type TestCluster } from '../../functions/kit/testing.ts';
import { repoRoot } from '../../local/service.ts';

const exec = promisify(execFile);
const bin = join(
  repoRoot,
  (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin
    .levelset ?? 'missing',
);
const resource = { group: 'samplecontroller.k8s.io', version: 'v1alpha1', plural: 'foos' };

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

describe('levelset conditions', () => {
  let cluster: TestCluster;
  let custom: CustomObjectsApi;
  let stateDir: string;
  let mixed: string;
  let allReady: string;
  const levelset = async (...args: string[]): Promise<Run> => {
    try {
      const { stdout, stderr } = await exec(process.execPath, [bin, 'conditions', ...args], {
        cwd: repoRoot,
        env: { ...process.env, KUBECONFIG: cluster.kubeconfigPath, LEVELSET_STATE_DIR: stateDir },
      });
      return { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code: number; stdout: string; stderr: string };
      return { code: e.code, stdout: e.stdout, stderr: e.stderr };
    }
  };
  const createFoo = async (namespace: string, name: string, ready?: object) => {
    await custom.createNamespacedCustomObject({
      ...resource,
      namespace,
      body: {
        apiVersion: 'samplecontroller.k8s.io/v1alpha1',
        kind: 'Foo',
        metadata: { name },
        spec: { deploymentName: `${name}-deploy`, replicas: 1 },
      },
    });
    if (ready)
      await custom.patchNamespacedCustomObjectStatus(
        {
          ...resource,
          namespace,
          name,
          body: {
            status: {
              conditions: [
                { type: 'Ready', lastTransitionTime: metaTime(new Date()), observedGeneration: 1, ...ready },
              ],
            },
          },
        },
        setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
      );
  };

  before(async () => {
    stateDir = mkdtempSync(join(tmpdir(), 'levelset-state-')); // no local stack: KUBECONFIG's cluster
    cluster = await startTestCluster();
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    mixed = await cluster.createNamespace('conditions');
    allReady = await cluster.createNamespace('conditions-ok');
    await cluster.applyCrd(join(repoRoot, 'examples/foo/controllers/foo/crd.yaml'), resource, mixed);
    await createFoo(mixed, 'ready', {
      status: 'True',
      reason: 'DeploymentAvailable',
      message: '1 available',
    });
    await createFoo(mixed, 'taken', {
      status: 'False',
      reason: 'ErrResourceExists',
      message: 'Resource "taken-deploy" already exists and is not managed by Foo',
    });
    await createFoo(mixed, 'stale', { status: 'True', reason: 'DeploymentAvailable', message: '' });
    // A spec change: generation 2, while Ready still says generation 1.
    await custom.patchNamespacedCustomObject(
      { ...resource, namespace: mixed, name: 'stale', body: { spec: { replicas: 2 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await createFoo(mixed, 'fresh');
    await createFoo(allReady, 'fine', { status: 'True', reason: 'DeploymentAvailable', message: '' });
  });
  after(async () => {
    await cluster?.stop();
    rmSync(stateDir, { recursive: true, force: true });
  });

  it('lists every Foo not Ready, with reason, message and generation lag, and exits 1', async () => {
    const run = await levelset('--controller', 'foo', '-n', mixed, '-o', 'json');
    assert.equal(run.code, 1, run.stderr);
    const out = JSON.parse(run.stdout) as {
      checked: number;
      notReady: { key: string; ready: string; reason: string; message: string; generationLag?: number }[];
    };
    assert.equal(out.checked, 4);
    const byKey = new Map(out.notReady.map((n) => [n.key, n]));
    assert.deepEqual([...byKey.keys()].sort(), [`${mixed}/fresh`, `${mixed}/stale`, `${mixed}/taken`]);
    assert.deepEqual(
      { ...byKey.get(`${mixed}/taken`), ageMs: undefined },
      {
        controller: 'foo',
        key: `${mixed}/taken`,
        ready: 'False',
        reason: 'ErrResourceExists',
        message: 'Resource "taken-deploy" already exists and is not managed by Foo',
        generationLag: 0,
        ageMs: undefined,
      },
    );
    assert.equal(byKey.get(`${mixed}/stale`)?.ready, 'True');
    assert.equal(byKey.get(`${mixed}/stale`)?.generationLag, 1);
    assert.equal(byKey.get(`${mixed}/fresh`)?.ready, 'absent');
    assert.equal(byKey.get(`${mixed}/fresh`)?.reason, 'NotReconciled');
  });

  it('prints a table of them for a person', async () => {
    const run = await levelset('-n', mixed);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stdout, /ErrResourceExists/);
    assert.match(run.stdout, new RegExp(`${mixed}/stale`));
    assert.doesNotMatch(run.stdout, new RegExp(`${mixed}/ready `));
    assert.match(run.stdout, new RegExp(`3 of 4 objects not Ready in namespace ${mixed}`));
  });

  it('exits 0 when every object is Ready, so it can gate a rollout', async () => {
    const run = await levelset('--controller', 'foo', '--namespace', allReady);
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, new RegExp(`all 1 objects Ready in namespace ${allReady}`));
  });

  it('looks in every namespace with --all-namespaces', async () => {
    const run = await levelset('--controller', 'foo', '-A', '-o', 'json');
    assert.equal(run.code, 1, run.stderr);
    const keys = (JSON.parse(run.stdout) as { notReady: { key: string }[] }).notReady.map((n) => n.key);
    assert.ok(keys.includes(`${mixed}/taken`));
    assert.ok(!keys.some((k) => k.startsWith(`${allReady}/`)));
  });

  it('refuses an unknown controller and contradictory flags with exit 2', async () => {
    const unknown = await levelset('--controller', 'nope');
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown controller "nope"/);
    const both = await levelset('-n', mixed, '-A');
    assert.equal(both.code, 2);
    const noReady = await levelset('--controller', 'secret-replicator');
    assert.equal(noReady.code, 2);
    assert.match(noReady.stderr, /maintains no Ready condition/);
  });
});
