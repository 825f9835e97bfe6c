/**
 * The owner-faults suite (issue 11), shared by the controllers that own children: on real parts
 * (relay, Pub/Sub emulator, `reconcile`, local API server with its garbage collector), a primary
 * deleted while the relay is down, a child whose owner is gone (a controller reference to a primary
 * that no longer exists), and a child deleted while nothing watched. The garbage collector removes
 * what has no owner; the next resync restores what a primary still asks for. Waits with deadlines
 * for exactly the expected children. test/integration/faults-owner*.test.ts run it per controller.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, CoreV1Api, CustomObjectsApi, type V1OwnerReference } from '@kubernetes/client-node';
import { stackFaults } from '../../local/stack-faults.ts';
import { type Pipeline, serverlessStack, startPipeline } from './pipeline.ts';
import { waitFor } from './wait.ts';

/** The API clients a case reads and writes children with, and the test namespace. */
export interface OwnerFaultsContext {
  core: CoreV1Api;
  apps: AppsV1Api;
  custom: CustomObjectsApi;
  ns: string;
}

/** A primary as listed: name, uid and spec. */
export interface ListedPrimary {
  metadata: { name: string; uid: string };
  spec: Record<string, unknown>;
}

/** What differs between controllers; the faults and the waits are the suite's. */
export interface OwnerFaultsCase {
  /** The controller's registry name (its entry in the resync report). */
  controller: string;
  kind: string;
  resource: { group: string; version: string; plural: string };
  /** The CRD manifest's path. */
  crd: string;
  /** Prefix of the test namespace. */
  namespacePrefix: string;
  /** The children's plural, for messages (`Deployments`, `Pods`). */
  children: string;
  /** The spec of the primary that stays (`keep`) and of the one deleted (`gone`). */
  spec(name: 'keep' | 'gone'): Record<string, unknown>;
  /** What differs from exactly the children the live primaries ask for (empty when converged). */
  problems(ctx: OwnerFaultsContext, primaries: ListedPrimary[]): Promise<string[]>;
  /** Deletes one child of the primary `keep`. */
  deleteChildOfKeep(ctx: OwnerFaultsContext): Promise<unknown>;
  /** Creates a child controlled by `owner` (a primary already deleted). */
  createStray(ctx: OwnerFaultsContext, owner: V1OwnerReference): Promise<unknown>;
}

/** Declares the suite for one controller (a `describe` with one test). */
export function ownerFaultsSuite(c: OwnerFaultsCase): void {
  const { group, version, plural } = c.resource;
  describe(`owned children after faults (${c.controller})`, () => {
    let p: Pipeline;
    let ctx: OwnerFaultsContext;

    const create = (name: 'keep' | 'gone') =>
      ctx.custom.createNamespacedCustomObject({
        group,
        version,
        plural,
        namespace: ctx.ns,
        body: { apiVersion: `${group}/${version}`, kind: c.kind, metadata: { name }, spec: c.spec(name) },
      }) as Promise<{ metadata: { uid: string } }>;
    /** Throws unless the children are exactly those the live primaries ask for. */
    const checkExact = async (): Promise<true> => {
      const primaries = (await ctx.custom.listNamespacedCustomObject({
        group,
        version,
        plural,
        namespace: ctx.ns,
      })) as { items: ListedPrimary[] };
      const problems = await c.problems(ctx, primaries.items);
      if (problems.length) throw new Error(problems.join(', '));
      return true;
    };

    before(async () => {
      p = await startPipeline(async (cluster) => {
        const kc = cluster.kubeConfig;
        const ns = await cluster.createNamespace(c.namespacePrefix);
        ctx = {
          core: kc.makeApiClient(CoreV1Api),
          apps: kc.makeApiClient(AppsV1Api),
          custom: kc.makeApiClient(CustomObjectsApi),
          ns,
        };
        await cluster.applyCrd(c.crd, c.resource, ns);
        return {};
      });
    });

    after(async () => {
      await p?.stop();
    });

    it(`removes ${c.children} whose owner is gone and restores a missed deletion, after the relay was down`, async (t) => {
      await create('keep');
      const gone = await create('gone');
      await waitFor(checkExact, { timeoutMs: 60_000, message: `the ${c.children} of both ${c.kind}s` });

      await stackFaults(serverlessStack(p)).killRelay();
      const started = Date.now();
      // Nothing watches now: each of these is a missed event.
      await ctx.custom.deleteNamespacedCustomObject({
        group,
        version,
        plural,
        namespace: ctx.ns,
        name: 'gone',
      });
      await c.deleteChildOfKeep(ctx);
      // A child whose owner vanished (a primary deleted while its reconcile was still writing it).
      await c.createStray(ctx, {
        apiVersion: `${group}/${version}`,
        kind: c.kind,
        name: 'gone',
        uid: gone.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      });
      const report = await serverlessStack(p).runResync();
      assert.ok(!report.controllers[c.controller]?.error, JSON.stringify(report));
      await waitFor(checkExact, {
        timeoutMs: 60_000,
        message: `exactly the ${c.children} of the ${c.kind} left`,
      });
      t.diagnostic(`converged ${Date.now() - started} ms after the faults, the relay still down`);
      await p.stack.startRelay();
      await checkExact();
    });
  });
}
