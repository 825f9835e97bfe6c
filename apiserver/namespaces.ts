/**
 * Namespace lifecycle as kube-controller-manager runs it: a new namespace gets its `default`
 * ServiceAccount and `kube-root-ca.crt` ConfigMap; a deleted namespace is `Terminating` while its
 * contents are deleted, then its `kubernetes` finalizer is removed and it goes.
 */
import type { Registry } from './registry.ts';
import { ApiError } from './status.ts';
import type { StoreEvent } from './store.ts';

/** A placeholder CA bundle for `kube-root-ca.crt` (no TLS is served). */
const ROOT_CA =
  '-----BEGIN CERTIFICATE-----\nbGV2ZWxzZXQtbG9jYWwtYXBpc2VydmVyLW5vLXRscw==\n-----END CERTIFICATE-----\n';

export class NamespaceController {
  private readonly registry: Registry;
  private readonly init = new Set<string>();
  private readonly terminating = new Set<string>();
  private scheduled = false;

  constructor(registry: Registry) {
    this.registry = registry;
  }

  onEvent(e: StoreEvent): void {
    if (e.storage === '/namespaces') {
      const name = e.object.metadata.name ?? '';
      if (e.type === 'ADDED') this.init.add(name);
      if (e.type !== 'DELETED' && e.object.metadata.deletionTimestamp) this.terminating.add(name);
    } else if (e.object.metadata.namespace) {
      const ns = this.registry.store.get('/namespaces', e.object.metadata.namespace);
      if (ns?.metadata.deletionTimestamp) this.terminating.add(e.object.metadata.namespace);
    }
    if (this.init.size > 0 || this.terminating.size > 0) this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const init = [...this.init];
      const term = [...this.terminating];
      this.init.clear();
      this.terminating.clear();
      for (const ns of init) this.initialize(ns);
      for (const ns of term) this.finalize(ns);
    });
  }

  private ignoreExpected(fn: () => void): void {
    try {
      fn();
    } catch (err) {
      if (err instanceof ApiError && [403, 404, 409].includes(err.code)) return;
      throw err;
    }
  }

  private initialize(ns: string): void {
    const sa = this.registry.resources.byPlural('', 'v1', 'serviceaccounts');
    const cm = this.registry.resources.byPlural('', 'v1', 'configmaps');
    if (sa) this.ignoreExpected(() => this.registry.create(sa, ns, { metadata: { name: 'default' } }));
    if (cm) {
      this.ignoreExpected(() =>
        this.registry.create(cm, ns, {
          metadata: {
            name: 'kube-root-ca.crt',
            annotations: {
              'kubernetes.io/description':
                'Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.',
            },
          },
          data: { 'ca.crt': ROOT_CA },
        }),
      );
    }
  }

  private finalize(ns: string): void {
    const nsType = this.registry.resources.byPlural('', 'v1', 'namespaces');
    const nsObj = this.registry.store.get('/namespaces', ns);
    if (!nsType || !nsObj?.metadata.deletionTimestamp) return;
    let remaining = 0;
    for (const t of this.registry.resources.storages()) {
      if (!t.namespaced) continue;
      for (const o of this.registry.store.list(t.storage, ns)) {
        remaining++;
        if (!o.metadata.deletionTimestamp) {
          this.ignoreExpected(() =>
            this.registry.delete(t, ns, o.metadata.name ?? '', { propagationPolicy: 'Background' }),
          );
        }
      }
    }
    if (remaining > 0) {
      let left = 0;
      for (const t of this.registry.resources.storages())
        if (t.namespaced) left += this.registry.store.count(t.storage, ns);
      if (left > 0) return; // objects with finalizers: re-checked on their events
    }
    const current = this.registry.store.get('/namespaces', ns);
    if (!current) return;
    const spec = (current.spec ?? {}) as { finalizers?: string[] };
    this.ignoreExpected(() =>
      this.registry.update(
        nsType,
        undefined,
        ns,
        {
          ...current,
          spec: { ...spec, finalizers: (spec.finalizers ?? []).filter((f) => f !== 'kubernetes') },
        },
        {},
        'finalize',
      ),
    );
  }
}
