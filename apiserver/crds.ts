/**
 * CustomResourceDefinitions: serving custom resources at their group/version/plural as soon as the CRD
 * exists (status subresource when declared, schema validation and pruning), the apiextensions
 * controllers' status (NamesAccepted, Established), and the cleanup finalizer that deletes every
 * custom resource before the CRD goes.
 */
import { FINALIZER_CRD_CLEANUP, now, type Registry } from './registry.ts';
import { type JSONSchemaProps, type KubeObject, type PrinterColumn, resourceType } from './resources.ts';
import { ApiError } from './status.ts';
import type { StoreEvent } from './store.ts';

const CRD_STORAGE = 'apiextensions.k8s.io/customresourcedefinitions';

interface CrdVersion {
  name: string;
  served?: boolean;
  storage?: boolean;
  schema?: { openAPIV3Schema?: JSONSchemaProps };
  subresources?: { status?: object; scale?: object };
  additionalPrinterColumns?: PrinterColumn[];
}

interface CrdSpec {
  group: string;
  names: {
    plural: string;
    singular?: string;
    kind: string;
    listKind?: string;
    shortNames?: string[];
    categories?: string[];
  };
  scope: 'Namespaced' | 'Cluster';
  versions: CrdVersion[];
}

/** Keeps the served custom resource types in step with the stored CRDs. */
export class CrdController {
  private readonly registry: Registry;
  private readonly pending = new Set<string>();
  private scheduled = false;

  constructor(registry: Registry) {
    this.registry = registry;
  }

  /** Store listener: registers types synchronously (so a CR can be created right after its CRD). */
  onEvent(e: StoreEvent): void {
    if (e.storage !== CRD_STORAGE) return;
    const name = e.object.metadata.name ?? '';
    if (e.type === 'DELETED') {
      this.registry.resources.removeCustom(name);
      return;
    }
    this.register(e.object);
    const conditions =
      (e.object.status as { conditions?: { type: string; status: string }[] } | undefined)?.conditions ?? [];
    const established = conditions.some((c) => c.type === 'Established' && c.status === 'True');
    if (!established || e.object.metadata.deletionTimestamp) {
      this.pending.add(name);
      this.schedule();
    }
  }

  private register(crd: KubeObject): void {
    const spec = crd.spec as CrdSpec;
    const name = crd.metadata.name ?? '';
    this.registry.resources.removeCustom(name);
    for (const v of spec.versions ?? []) {
      if (v.served === false) continue;
      this.registry.resources.add(
        resourceType(
          {
            group: spec.group,
            version: v.name,
            plural: spec.names.plural,
            singular: spec.names.singular ?? spec.names.kind.toLowerCase(),
            kind: spec.names.kind,
            namespaced: spec.scope === 'Namespaced',
            shortNames: spec.names.shortNames ?? [],
            categories: spec.names.categories ?? [],
            statusSubresource: !!v.subresources?.status,
            hasGeneration: true,
          },
          {
            listKind: spec.names.listKind ?? `${spec.names.kind}List`,
            custom: {
              schema: v.schema?.openAPIV3Schema,
              printerColumns: v.additionalPrinterColumns ?? [],
              crdName: name,
            },
          },
        ),
      );
    }
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const names = [...this.pending];
      this.pending.clear();
      for (const n of names) this.sync(n);
    });
  }

  private sync(name: string): void {
    const crdType = this.registry.resources.byPlural(
      'apiextensions.k8s.io',
      'v1',
      'customresourcedefinitions',
    );
    if (!crdType) return;
    const crd = this.registry.store.get(CRD_STORAGE, name);
    if (!crd) return;
    try {
      if (crd.metadata.deletionTimestamp) this.cleanup(crd);
      else this.establish(crd);
    } catch (err) {
      if (!(err instanceof ApiError && (err.code === 409 || err.code === 404))) throw err;
      this.pending.add(name);
      this.schedule();
    }
  }

  private establish(crd: KubeObject): void {
    const crdType = this.registry.resources.byPlural(
      'apiextensions.k8s.io',
      'v1',
      'customresourcedefinitions',
    );
    if (!crdType) return;
    const spec = crd.spec as CrdSpec;
    const time = now();
    const status = {
      ...(crd.status as object),
      acceptedNames: {
        plural: spec.names.plural,
        singular: spec.names.singular,
        kind: spec.names.kind,
        listKind: spec.names.listKind ?? `${spec.names.kind}List`,
        ...(spec.names.shortNames ? { shortNames: spec.names.shortNames } : {}),
        ...(spec.names.categories ? { categories: spec.names.categories } : {}),
      },
      conditions: [
        {
          type: 'NamesAccepted',
          status: 'True',
          lastTransitionTime: time,
          reason: 'NoConflicts',
          message: 'no conflicts found',
        },
        {
          type: 'Established',
          status: 'True',
          lastTransitionTime: time,
          reason: 'InitialNamesAccepted',
          message: 'the initial names have been accepted',
        },
      ],
    };
    this.registry.update(crdType, undefined, crd.metadata.name ?? '', { ...crd, status }, {}, 'status');
  }

  private cleanup(crd: KubeObject): void {
    const crdType = this.registry.resources.byPlural(
      'apiextensions.k8s.io',
      'v1',
      'customresourcedefinitions',
    );
    const spec = crd.spec as CrdSpec;
    const storage = `${spec.group}/${spec.names.plural}`;
    const t = this.registry.resources.all().find((r) => r.storage === storage);
    if (!crdType) return;
    if (t) {
      for (const o of this.registry.store.list(storage)) {
        if (o.metadata.deletionTimestamp) continue;
        try {
          this.registry.delete(t, o.metadata.namespace, o.metadata.name ?? '');
        } catch (err) {
          if (!(err instanceof ApiError && err.code === 404)) throw err;
        }
      }
      if (this.registry.store.count(storage) > 0) return; // wait for their finalizers; re-synced on their events
    }
    const finalizers = (crd.metadata.finalizers ?? []).filter((f) => f !== FINALIZER_CRD_CLEANUP);
    this.registry.update(crdType, undefined, crd.metadata.name ?? '', {
      ...crd,
      metadata: { ...crd.metadata, finalizers },
    });
  }

  /** Store listener for custom resources: a terminating CRD is re-synced when its objects change. */
  onAnyEvent(e: StoreEvent): void {
    if (e.type !== 'DELETED' || e.storage === CRD_STORAGE) return;
    for (const crd of this.registry.store.list(CRD_STORAGE)) {
      const spec = crd.spec as CrdSpec;
      if (crd.metadata.deletionTimestamp && `${spec.group}/${spec.names.plural}` === e.storage) {
        this.pending.add(crd.metadata.name ?? '');
        this.schedule();
      }
    }
  }
}
