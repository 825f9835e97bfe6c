/**
 * Owner-reference garbage collection as kube-controller-manager's garbagecollector does it:
 * dependents whose owners are all gone are deleted (background), an owner deleted with
 * `propagationPolicy: Foreground` keeps its `foregroundDeletion` finalizer until its blocking
 * dependents are gone, `Orphan` strips the owner reference from dependents, and references to owners
 * that no longer exist are removed when other owners remain.
 */
import { FINALIZER_FOREGROUND, FINALIZER_ORPHAN, type Registry } from './registry.ts';
import type { KubeObject, OwnerReference, ResourceType } from './resources.ts';
import { ApiError } from './status.ts';
import { objectKey, type StoreEvent } from './store.ts';

interface Ref {
  storage: string;
  key: string;
}

export class GarbageCollector {
  private readonly registry: Registry;
  private readonly dependents = new Map<string, Ref>();
  private readonly owners = new Map<string, Ref>();
  private scheduled = false;

  constructor(registry: Registry) {
    this.registry = registry;
  }

  onEvent(e: StoreEvent): void {
    const o = e.object;
    const ref = { storage: e.storage, key: e.key };
    const id = `${e.storage}|${e.key}`;
    if (e.type === 'DELETED') {
      this.dependents.delete(id);
      for (const dep of this.dependentsOf(o.metadata.uid ?? ''))
        this.dependents.set(`${dep.storage}|${dep.key}`, dep);
      // an owner waiting for its dependents re-checks when one goes
      if ((o.metadata.ownerReferences ?? []).length > 0)
        for (const r of this.ownerRefsAsRefs(o)) this.owners.set(`${r.storage}|${r.key}`, r);
    } else {
      if ((o.metadata.ownerReferences ?? []).length > 0) this.dependents.set(id, ref);
      const f = o.metadata.finalizers ?? [];
      if (o.metadata.deletionTimestamp && (f.includes(FINALIZER_FOREGROUND) || f.includes(FINALIZER_ORPHAN)))
        this.owners.set(id, ref);
    }
    if (this.dependents.size > 0 || this.owners.size > 0) this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const owners = [...this.owners.values()];
      const deps = [...this.dependents.values()];
      this.owners.clear();
      this.dependents.clear();
      for (const r of owners) this.guard(() => this.processOwner(r));
      for (const r of deps) this.guard(() => this.attemptToDelete(r));
    });
  }

  private guard(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      if (err instanceof ApiError && (err.code === 404 || err.code === 409)) return;
      throw err;
    }
  }

  private typeOf(storage: string): ResourceType | undefined {
    return this.registry.resources.storages().find((t) => t.storage === storage);
  }

  private ownerRefsAsRefs(o: KubeObject): Ref[] {
    const out: Ref[] = [];
    for (const r of o.metadata.ownerReferences ?? []) {
      const t = this.registry.resources.byApiVersionKind(r.apiVersion, r.kind);
      if (t)
        out.push({
          storage: t.storage,
          key: objectKey(t.namespaced ? o.metadata.namespace : undefined, r.name),
        });
    }
    return out;
  }

  /** Every stored object with an owner reference to `uid`. */
  private dependentsOf(uid: string): Ref[] {
    if (!uid) return [];
    const out: Ref[] = [];
    for (const t of this.registry.resources.storages()) {
      this.registry.store.scan(t.storage, (o) => {
        if ((o.metadata.ownerReferences ?? []).some((r) => r.uid === uid)) {
          out.push({ storage: t.storage, key: objectKey(o.metadata.namespace, o.metadata.name ?? '') });
        }
      });
    }
    return out;
  }

  private processOwner(ref: Ref): void {
    const t = this.typeOf(ref.storage);
    const owner = this.registry.store.get(ref.storage, ref.key);
    if (!t || !owner?.metadata.deletionTimestamp) return;
    const uid = owner.metadata.uid ?? '';
    const finalizers = owner.metadata.finalizers ?? [];
    const deps = this.dependentsOf(uid);
    let remove: string | undefined;
    if (finalizers.includes(FINALIZER_ORPHAN)) {
      for (const d of deps) {
        const dt = this.typeOf(d.storage);
        const obj = this.registry.store.get(d.storage, d.key);
        if (!dt || !obj) continue;
        const refs = (obj.metadata.ownerReferences ?? []).filter((r) => r.uid !== uid);
        this.guard(() => {
          this.registry.update(dt, obj.metadata.namespace, obj.metadata.name ?? '', {
            ...this.registry.toVersion(dt, obj),
            metadata: { ...obj.metadata, ownerReferences: refs.length ? refs : undefined },
          });
        });
      }
      remove = FINALIZER_ORPHAN;
    } else if (finalizers.includes(FINALIZER_FOREGROUND)) {
      let blocking = 0;
      for (const d of deps) {
        const dt = this.typeOf(d.storage);
        const obj = this.registry.store.get(d.storage, d.key);
        if (!dt || !obj) continue;
        const r = (obj.metadata.ownerReferences ?? []).find((x) => x.uid === uid);
        if (r?.blockOwnerDeletion) blocking++;
        if (!obj.metadata.deletionTimestamp) {
          const hasOwnDependents = this.dependentsOf(obj.metadata.uid ?? '').length > 0;
          this.guard(() => {
            this.registry.delete(dt, obj.metadata.namespace, obj.metadata.name ?? '', {
              propagationPolicy: hasOwnDependents ? 'Foreground' : 'Background',
            });
          });
        }
      }
      if (blocking > 0) return;
      remove = FINALIZER_FOREGROUND;
    }
    if (!remove) return;
    const current = this.registry.store.get(ref.storage, ref.key);
    if (!current) return;
    const rest = (current.metadata.finalizers ?? []).filter((f) => f !== remove);
    this.registry.update(t, current.metadata.namespace, current.metadata.name ?? '', {
      ...this.registry.toVersion(t, current),
      metadata: { ...current.metadata, finalizers: rest },
    });
  }

  private attemptToDelete(ref: Ref): void {
    const t = this.typeOf(ref.storage);
    const obj = this.registry.store.get(ref.storage, ref.key);
    if (!t || !obj || obj.metadata.deletionTimestamp) return;
    const refs = obj.metadata.ownerReferences ?? [];
    if (refs.length === 0) return;
    const solid: OwnerReference[] = [];
    const dangling: OwnerReference[] = [];
    const waiting: OwnerReference[] = [];
    for (const r of refs) {
      const ot = this.registry.resources.byApiVersionKind(r.apiVersion, r.kind);
      if (!ot) {
        solid.push(r); // unresolvable owner kind: the real GC cannot decide either and leaves the object
        continue;
      }
      if (ot.namespaced && !obj.metadata.namespace) {
        dangling.push(r);
        continue;
      }
      const owner = this.registry.store.get(
        ot.storage,
        objectKey(ot.namespaced ? obj.metadata.namespace : undefined, r.name),
      );
      if (!owner || owner.metadata.uid !== r.uid) dangling.push(r);
      else if (
        owner.metadata.deletionTimestamp &&
        (owner.metadata.finalizers ?? []).includes(FINALIZER_FOREGROUND)
      )
        waiting.push(r);
      else solid.push(r);
    }
    if (solid.length > 0) {
      if (dangling.length === 0 && waiting.length === 0) return;
      const drop = new Set([...dangling, ...waiting].map((r) => r.uid));
      const keep = refs.filter((r) => !drop.has(r.uid));
      this.registry.update(t, obj.metadata.namespace, obj.metadata.name ?? '', {
        ...this.registry.toVersion(t, obj),
        metadata: { ...obj.metadata, ownerReferences: keep },
      });
      return;
    }
    const hasOwnDependents = this.dependentsOf(obj.metadata.uid ?? '').length > 0;
    const policy = waiting.length > 0 && hasOwnDependents ? 'Foreground' : 'Background';
    this.registry.delete(t, obj.metadata.namespace, obj.metadata.name ?? '', { propagationPolicy: policy });
  }
}
