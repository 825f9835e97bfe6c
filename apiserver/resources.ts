/**
 * The resource types the local API server serves: one description per group/version/resource, used by
 * the one generic storage and verb path for built-ins and custom resources alike.
 */
import { isDeepStrictEqual } from 'node:util';
import { BUILTIN_RESOURCES } from './builtins.gen.ts';
import type { FieldError } from './status.ts';

/** A stored Kubernetes object (wire JSON). */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** metav1.ObjectMeta, the fields the server manages or reads. */
export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  managedFields?: unknown[];
  [field: string]: unknown;
}

/** metav1.OwnerReference. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** How a resource's names are validated (apimachinery validation.NameIsDNSSubdomain / NameIsDNSLabel). */
export type NameRule = 'subdomain' | 'label' | 'path';

/** A served resource: one group/version/plural. Versions of one resource share `storage`. */
export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  singular: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  /** Storage identity shared by every version of the resource: `<group>/<plural>`. */
  storage: string;
  /** Has a `/status` subresource: the main endpoint ignores status, `/status` changes only status. */
  statusSubresource: boolean;
  /** Sets `metadata.generation` (1 on create, +1 on spec change and on setting deletionTimestamp). */
  hasGeneration: boolean;
  /** Other subresources served (`token`, `finalize`). */
  subresources: string[];
  /** Field selector labels beyond `metadata.name`/`metadata.namespace` (as the type's GetAttrs). */
  fieldLabels: Record<string, (obj: KubeObject) => string>;
  nameRule: NameRule;
  /**
   * A delete that removes the object answers the object, not a `Status` (genericregistry.Store
   * `ReturnDeletedObject`: true for pods and serviceaccounts in kube-apiserver's registry).
   */
  returnDeletedObject?: boolean;
  /**
   * The verbs it serves, when not every one of {@link ALL_VERBS} (kube-apiserver's Namespace storage
   * has no DeleteCollection): from the generated table (builtins.gen.ts). Another verb answers 405.
   */
  verbs?: readonly string[];
  /** Not stored: create-only review resources (the access reviews, SelfSubjectReview): http.ts `virtualCreate`. */
  virtual?: boolean;
  /** Defaults applied on create and update (the scheme's defaulting functions). */
  defaults?(obj: KubeObject): void;
  /** Set server-owned fields on create (strategy PrepareForCreate). */
  prepareForCreate?(obj: KubeObject): void;
  /** Type-specific validation (strategy Validate / ValidateUpdate). */
  validate?(obj: KubeObject, old?: KubeObject): FieldError[];
  /** Converts a request body of this version to the storage form. */
  toStorage?(obj: KubeObject): KubeObject;
  /** Converts the storage form to this version. */
  fromStorage?(obj: KubeObject): KubeObject;
  /** Built-in resources: the `@kubernetes/client-node` model of its objects, whose fields it declares (builtin-schema.ts). */
  model?: string;
  /** Custom resources: the CRD's schema and printer columns for this version. */
  custom?: {
    schema?: JSONSchemaProps;
    printerColumns: PrinterColumn[];
    /** The CRD's name, `<plural>.<group>`. */
    crdName: string;
  };
}

/** The subset of apiextensions JSONSchemaProps the validator reads. */
export interface JSONSchemaProps {
  type?: string;
  properties?: Record<string, JSONSchemaProps>;
  items?: JSONSchemaProps;
  additionalProperties?: JSONSchemaProps | boolean;
  required?: string[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  minProperties?: number;
  maxProperties?: number;
  multipleOf?: number;
  pattern?: string;
  enum?: unknown[];
  format?: string;
  nullable?: boolean;
  'x-kubernetes-int-or-string'?: boolean;
  'x-kubernetes-preserve-unknown-fields'?: boolean;
  'x-kubernetes-embedded-resource'?: boolean;
  [key: string]: unknown;
}

/** A CRD additionalPrinterColumn. */
export interface PrinterColumn {
  name: string;
  type: string;
  jsonPath: string;
  description?: string;
  format?: string;
  priority?: number;
}

export const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

/** `group/version` as in `apiVersion` (`v1` for core). */
export function groupVersion(t: { group: string; version: string }): string {
  return t.group ? `${t.group}/${t.version}` : t.version;
}

/** Reads a dotted path of plain fields (`status.phase`) as the string a field selector compares. */
export function fieldPath(path: string): (obj: KubeObject) => string {
  const parts = path.split('.');
  return (obj) => {
    let v: unknown = obj;
    for (const p of parts) {
      if (v === null || typeof v !== 'object') return '';
      v = (v as Record<string, unknown>)[p];
    }
    if (v === undefined || v === null) return '';
    return typeof v === 'object' ? JSON.stringify(v) : String(v);
  };
}

function labels(...paths: string[]): Record<string, (obj: KubeObject) => string> {
  return Object.fromEntries(paths.map((p) => [p, fieldPath(p)]));
}

interface Spec {
  group: string;
  version: string;
  plural: string;
  kind: string;
  namespaced: boolean;
  shortNames?: string[];
  categories?: string[];
  statusSubresource?: boolean;
  hasGeneration?: boolean;
  subresources?: string[];
  fieldLabels?: Record<string, (obj: KubeObject) => string>;
  nameRule?: NameRule;
  storage?: string;
  singular?: string;
}

/** Builds a ResourceType with the usual derived fields. */
export function resourceType(spec: Spec, extra: Partial<ResourceType> = {}): ResourceType {
  return {
    group: spec.group,
    version: spec.version,
    plural: spec.plural,
    singular: spec.singular ?? spec.kind.toLowerCase(),
    kind: spec.kind,
    listKind: `${spec.kind}List`,
    namespaced: spec.namespaced,
    shortNames: spec.shortNames ?? [],
    categories: spec.categories ?? [],
    storage: spec.storage ?? `${spec.group}/${spec.plural}`,
    statusSubresource: spec.statusSubresource ?? false,
    hasGeneration: spec.hasGeneration ?? false,
    subresources: spec.subresources ?? [],
    fieldLabels: spec.fieldLabels ?? {},
    nameRule: spec.nameRule ?? 'subdomain',
    ...extra,
  };
}

function imagePullPolicy(image: unknown): string {
  if (typeof image !== 'string') return 'IfNotPresent';
  const last = image.split('/').pop() ?? '';
  if (image.includes('@')) return 'IfNotPresent';
  const tag = last.includes(':') ? last.split(':').pop() : undefined;
  return tag === undefined || tag === 'latest' ? 'Always' : 'IfNotPresent';
}

/** Pod spec defaults (k8s.io/kubernetes/pkg/apis/core/v1/defaults.go), the ones visible to clients. */
export function defaultPodSpec(spec: Record<string, unknown>): void {
  spec.restartPolicy ??= 'Always';
  spec.terminationGracePeriodSeconds ??= 30;
  spec.dnsPolicy ??= 'ClusterFirst';
  spec.securityContext ??= {};
  spec.schedulerName ??= 'default-scheduler';
  spec.enableServiceLinks ??= true;
  for (const key of ['containers', 'initContainers']) {
    const list = spec[key];
    if (!Array.isArray(list)) continue;
    for (const c of list as Record<string, unknown>[]) {
      if (!c || typeof c !== 'object') continue;
      c.terminationMessagePath ??= '/dev/termination-log';
      c.terminationMessagePolicy ??= 'File';
      c.imagePullPolicy ??= imagePullPolicy(c.image);
      c.resources ??= {};
      if (Array.isArray(c.ports)) for (const p of c.ports as Record<string, unknown>[]) p.protocol ??= 'TCP';
    }
  }
}

const TOKEN_MOUNT = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * What the default admission plugins add to a new Pod: the ServiceAccount plugin's projected
 * `kube-api-access-*` volume and its mounts (unless automountServiceAccountToken is false), and
 * DefaultTolerationSeconds' not-ready/unreachable tolerations.
 */
function admitPod(spec: Record<string, unknown>): void {
  const tolerations = Array.isArray(spec.tolerations) ? (spec.tolerations as Record<string, unknown>[]) : [];
  for (const key of ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable']) {
    if (!tolerations.some((t) => t?.key === key && t?.effect === 'NoExecute')) {
      tolerations.push({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 });
    }
  }
  spec.tolerations = tolerations;
  if (spec.automountServiceAccountToken === false) return;
  let suffix = '';
  for (let i = 0; i < 5; i++) suffix += 'bcdfghjklmnpqrstvwxz2456789'[Math.floor(Math.random() * 27)];
  const name = `kube-api-access-${suffix}`;
  const volumes = Array.isArray(spec.volumes) ? (spec.volumes as Record<string, unknown>[]) : [];
  volumes.push({
    name,
    projected: {
      defaultMode: 420,
      sources: [
        { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        {
          downwardAPI: {
            items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
          },
        },
      ],
    },
  });
  spec.volumes = volumes;
  for (const key of ['containers', 'initContainers']) {
    if (!Array.isArray(spec[key])) continue;
    for (const c of spec[key] as Record<string, unknown>[]) {
      if (!c || typeof c !== 'object') continue;
      const mounts = Array.isArray(c.volumeMounts) ? (c.volumeMounts as Record<string, unknown>[]) : [];
      if (mounts.some((m) => m?.mountPath === TOKEN_MOUNT)) continue;
      mounts.push({ name, readOnly: true, mountPath: TOKEN_MOUNT });
      c.volumeMounts = mounts;
    }
  }
}

function validatePodSpec(spec: unknown, path: string): FieldError[] {
  const errs: FieldError[] = [];
  const s = (spec ?? {}) as Record<string, unknown>;
  const containers = s.containers;
  if (!Array.isArray(containers) || containers.length === 0) {
    errs.push({ type: 'FieldValueRequired', field: `${path}.containers`, detail: 'Required value' });
    return errs;
  }
  containers.forEach((c: Record<string, unknown>, i) => {
    if (!c?.name)
      errs.push({
        type: 'FieldValueRequired',
        field: `${path}.containers[${i}].name`,
        detail: 'Required value',
      });
    if (!c?.image)
      errs.push({
        type: 'FieldValueRequired',
        field: `${path}.containers[${i}].image`,
        detail: 'Required value',
      });
  });
  return errs;
}

/**
 * Drops the members of `fields` that hold an empty map: Go serializes a `map[…]…` field tagged
 * `omitempty` (a ConfigMap's or a Secret's `data`, `binaryData`) not at all when it is empty, so
 * kube-apiserver never answers `data: {}`, whatever the request sent (k8s.io/api core/v1 types.go).
 */
function omitEmptyMaps(obj: KubeObject, fields: readonly string[]): void {
  for (const field of fields) {
    const v = obj[field];
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0)
      delete obj[field];
  }
}

/** Secrets and ConfigMaps marked `immutable: true` keep their data (core validation ValidateSecretUpdate/ValidateConfigMapUpdate). */
function validateImmutable(fields: string[]) {
  return (obj: KubeObject, old?: KubeObject): FieldError[] => {
    if (old?.immutable !== true) return [];
    const errs: FieldError[] = [];
    const why = 'Forbidden: field is immutable when `immutable` is set';
    if (obj.immutable !== true) errs.push({ type: 'FieldValueForbidden', field: 'immutable', detail: why });
    for (const f of fields) {
      if (JSON.stringify(obj[f] ?? {}) !== JSON.stringify(old[f] ?? {}))
        errs.push({ type: 'FieldValueForbidden', field: f, detail: why });
    }
    return errs;
  };
}

/** Largest total size of a Secret's decoded `data` values, bytes (core.MaxSecretSize, 1 MiB). */
export const MAX_SECRET_SIZE = 1024 * 1024;

/**
 * A Secret's data may hold at most {@link MAX_SECRET_SIZE} bytes, its values' decoded lengths summed
 * (core validation ValidateSecret: `field.TooLong(dataPath, "", core.MaxSecretSize)`, whose text is
 * `data: Too long: must have at most 1048576 bytes`).
 */
function validateSecretSize(obj: KubeObject): FieldError[] {
  let total = 0;
  for (const value of Object.values(asRecord(obj.data)))
    if (typeof value === 'string') total += Buffer.from(value, 'base64').length;
  return total > MAX_SECRET_SIZE
    ? [
        {
          type: 'FieldValueTooLong',
          field: 'data',
          detail: `Too long: must have at most ${MAX_SECRET_SIZE} bytes`,
        },
      ]
    : [];
}

function asRecord(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

const eventFields = labels(
  'involvedObject.kind',
  'involvedObject.namespace',
  'involvedObject.name',
  'involvedObject.uid',
  'involvedObject.apiVersion',
  'involvedObject.resourceVersion',
  'involvedObject.fieldPath',
  'reason',
  'reportingComponent',
  'type',
);
eventFields.source = (o) => fieldPath('source.component')(o) || fieldPath('reportingComponent')(o);

/** core/v1 Event field ↔ events.k8s.io/v1 Event field (one storage, as in kube-apiserver). */
const EVENT_RENAMES: [string, string][] = [
  ['involvedObject', 'regarding'],
  ['message', 'note'],
  ['reportingComponent', 'reportingController'],
  ['source', 'deprecatedSource'],
  ['firstTimestamp', 'deprecatedFirstTimestamp'],
  ['lastTimestamp', 'deprecatedLastTimestamp'],
  ['count', 'deprecatedCount'],
];

function renameFields(obj: KubeObject, pairs: [string, string][], apiVersion: string): KubeObject {
  const out: KubeObject = { ...obj, apiVersion };
  for (const [from, to] of pairs) {
    if (from in out) {
      out[to] = out[from];
      delete out[from];
    }
  }
  return out;
}

/**
 * Fields Go always serializes on a core/v1 Event (no `omitempty`, or a struct): a zero metav1.Time /
 * MicroTime is `null`, an empty EventSource `{}`, reportingComponent/reportingInstance `""`
 * (k8s.io/api core/v1 Event). The local storage form leaves them out.
 */
const CORE_EVENT_ZEROS: [string, unknown][] = [
  ['involvedObject', {}],
  ['source', {}],
  ['firstTimestamp', null],
  ['lastTimestamp', null],
  ['eventTime', null],
  ['reportingComponent', ''],
  ['reportingInstance', ''],
];

/** The same for events.k8s.io/v1 Event (structs and metav1.Time fields; its strings are omitempty). */
const EVENTS_V1_ZEROS: [string, unknown][] = [
  ['eventTime', null],
  ['regarding', {}],
  ['deprecatedSource', {}],
  ['deprecatedFirstTimestamp', null],
  ['deprecatedLastTimestamp', null],
];

/** Adds the zero values Go would serialize for absent fields. */
function withZeros(obj: KubeObject, zeros: [string, unknown][]): KubeObject {
  const out: KubeObject = { ...obj };
  for (const [k, zero] of zeros) if (out[k] === undefined) out[k] = structuredClone(zero);
  return out;
}

/** Storage form of a core/v1 Event: zero values (as {@link CORE_EVENT_ZEROS}) left out. */
function compactEvent(obj: KubeObject): KubeObject {
  const out: KubeObject = { ...obj };
  for (const [k, zero] of CORE_EVENT_ZEROS) {
    const v = out[k];
    if (v === null || v === '' || (isDeepStrictEqual(zero, {}) && isDeepStrictEqual(v, {}))) delete out[k];
  }
  return out;
}

/** Defaults of a workload's `spec.template` (a PodTemplateSpec): the pod spec's, and a null creationTimestamp. */
function defaultPodTemplate(spec: Record<string, unknown>): void {
  const template = asRecord(spec.template);
  spec.template = template;
  // Go serializes the template's zero metav1.Time as null (Kubernetes 1.32).
  template.metadata = { creationTimestamp: null, ...asRecord(template.metadata) };
  const podSpec = asRecord(template.spec);
  template.spec = podSpec;
  defaultPodSpec(podSpec);
}

/** The first address of the default service-cluster-ip-range 10.96.0.0/12 handed to Services (10.96.0.1 is `kubernetes`). */
const FIRST_SERVICE_IP = (10 << 24) | (96 << 16) | 10;

/**
 * core/v1 Service defaults (SetDefaults_Service) and what the Service REST storage allocates on create:
 * a ClusterIP (from 10.96.0.0/12; kube-apiserver picks at random), node ports (30000-32767) for NodePort
 * and LoadBalancer Services. No real networking: nothing answers on these addresses.
 */
function serviceType(): ResourceType {
  let nextIp = FIRST_SERVICE_IP;
  let nextNodePort = 30000;
  return resourceType(
    {
      group: '',
      version: 'v1',
      plural: 'services',
      kind: 'Service',
      namespaced: true,
      shortNames: ['svc'],
      categories: ['all'],
      statusSubresource: true,
    },
    {
      defaults(obj) {
        const spec = asRecord(obj.spec);
        obj.spec = spec;
        spec.type ??= 'ClusterIP';
        spec.sessionAffinity ??= 'None';
        if (spec.type !== 'ExternalName') spec.internalTrafficPolicy ??= 'Cluster';
        if (spec.type === 'NodePort' || spec.type === 'LoadBalancer')
          spec.externalTrafficPolicy ??= 'Cluster';
        if (spec.type === 'LoadBalancer') spec.allocateLoadBalancerNodePorts ??= true;
        for (const port of Array.isArray(spec.ports) ? (spec.ports as Record<string, unknown>[]) : []) {
          port.protocol ??= 'TCP';
          port.targetPort ??= port.port;
        }
      },
      prepareForCreate(obj) {
        const spec = asRecord(obj.spec);
        obj.status = { loadBalancer: {} };
        if (spec.type === 'ExternalName') return;
        if (spec.clusterIP === undefined || spec.clusterIP === '') {
          const ip = nextIp++;
          spec.clusterIP = [ip >>> 24, (ip >>> 16) & 255, (ip >>> 8) & 255, ip & 255].join('.');
        }
        spec.clusterIPs = [spec.clusterIP];
        spec.ipFamilies ??= ['IPv4'];
        spec.ipFamilyPolicy ??= 'SingleStack';
        if (spec.type === 'NodePort' || spec.type === 'LoadBalancer') {
          for (const port of Array.isArray(spec.ports) ? (spec.ports as Record<string, unknown>[]) : [])
            port.nodePort ??= nextNodePort++;
        }
      },
      validate(obj) {
        const spec = asRecord(obj.spec);
        const ports = Array.isArray(spec.ports) ? spec.ports : [];
        if (ports.length === 0 && spec.type !== 'ExternalName' && spec.clusterIP !== 'None')
          return [{ type: 'FieldValueRequired', field: 'spec.ports', detail: 'Required value' }];
        return [];
      },
    },
  );
}

/**
 * Deployment and ReplicaSet spec validation (apps ValidateDeploymentSpec/ValidateReplicaSetSpec): a
 * non-empty immutable selector matching the template's labels, and a valid pod template.
 */
function validateReplicatedPods(obj: KubeObject, old?: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const spec = asRecord(obj.spec);
  const selector = asRecord(spec.selector);
  if (old && JSON.stringify(selector) !== JSON.stringify(asRecord(asRecord(old.spec).selector))) {
    errs.push({
      type: 'FieldValueInvalid',
      field: 'spec.selector',
      detail: `Invalid value: ${JSON.stringify(selector)}: field is immutable`,
    });
  }
  const matchLabels = asRecord(selector.matchLabels);
  if (!spec.selector)
    errs.push({ type: 'FieldValueRequired', field: 'spec.selector', detail: 'Required value' });
  else if (Object.keys(matchLabels).length === 0 && !Array.isArray(selector.matchExpressions)) {
    errs.push({
      type: 'FieldValueInvalid',
      field: 'spec.selector',
      detail: 'Invalid value: "null": empty selector is invalid for deployment',
    });
  }
  const tlabels = asRecord(asRecord(asRecord(spec.template).metadata).labels);
  if (spec.selector && Object.entries(matchLabels).some(([k, v]) => tlabels[k] !== v)) {
    errs.push({
      type: 'FieldValueInvalid',
      field: 'spec.template.metadata.labels',
      detail: `Invalid value: map[string]string{${Object.entries(tlabels)
        .map(([k, v]) => `"${k}":"${v}"`)
        .join(', ')}}: \`selector\` does not match template \`labels\``,
    });
  }
  errs.push(...validatePodSpec(asRecord(spec.template).spec, 'spec.template.spec'));
  return errs;
}

/**
 * The built-in resources, in discovery order: those whose behaviour Levelset's tests need (defaults,
 * strategies, admission, conversions: {@link handwrittenResources}), then every other resource
 * kube-apiserver v1.32 serves, generic but exact in wire format, from the table generated from
 * client-node's API classes (builtins.gen.ts: scope, subresources, short names, categories).
 */
export function builtinResources(): ResourceType[] {
  const table = new Map(BUILTIN_RESOURCES.map((r) => [`${r.group}/${r.plural}`, r]));
  const handwritten = handwrittenResources().map((r) => {
    const row = table.get(`${r.group}/${r.plural}`);
    return { ...r, model: row?.model, ...(row && !r.virtual ? { verbs: row.verbs } : {}) };
  });
  const served = new Set(handwritten.map((r) => `${r.group}/${r.plural}`));
  const generic = BUILTIN_RESOURCES.filter((r) => !served.has(`${r.group}/${r.plural}`)).map((r) =>
    resourceType(
      {
        group: r.group,
        version: r.version,
        plural: r.plural,
        kind: r.kind,
        namespaced: r.namespaced,
        shortNames: r.shortNames,
        categories: r.categories,
        statusSubresource: r.subresources.includes('status'),
        hasGeneration: r.generation,
      },
      { model: r.model, verbs: r.verbs },
    ),
  );
  return [...handwritten, ...generic];
}

/** The built-in resources with behaviour of their own, in discovery order. */
function handwrittenResources(): ResourceType[] {
  const core = (s: Omit<Spec, 'group' | 'version'>, extra?: Partial<ResourceType>) =>
    resourceType({ group: '', version: 'v1', ...s }, extra);
  const rbac = (plural: string, kind: string, namespaced: boolean) =>
    resourceType({
      group: 'rbac.authorization.k8s.io',
      version: 'v1',
      plural,
      kind,
      namespaced,
      nameRule: 'path',
    });
  return [
    core(
      {
        plural: 'namespaces',
        kind: 'Namespace',
        namespaced: false,
        shortNames: ['ns'],
        statusSubresource: true,
        subresources: ['finalize'],
        fieldLabels: labels('status.phase'),
        nameRule: 'label',
      },
      {
        prepareForCreate(obj) {
          obj.spec = { finalizers: ['kubernetes'] };
          obj.status = { phase: 'Active' };
          obj.metadata.labels = {
            ...obj.metadata.labels,
            'kubernetes.io/metadata.name': obj.metadata.name ?? '',
          };
        },
        defaults(obj) {
          if (obj.metadata.name) {
            obj.metadata.labels = {
              ...obj.metadata.labels,
              'kubernetes.io/metadata.name': obj.metadata.name,
            };
          }
        },
      },
    ),
    core(
      { plural: 'secrets', kind: 'Secret', namespaced: true, fieldLabels: labels('type') },
      {
        defaults(obj) {
          obj.type ??= 'Opaque';
          // stringData is write-only: merged into data (base64) as the core/v1 conversion does.
          const stringData = asRecord(obj.stringData);
          if (obj.stringData !== undefined) {
            const data = { ...asRecord(obj.data) };
            for (const [k, v] of Object.entries(stringData))
              data[k] = Buffer.from(String(v), 'utf8').toString('base64');
            obj.data = data;
            delete obj.stringData;
          }
          omitEmptyMaps(obj, ['data']);
        },
        validate: (obj, old) => [...validateSecretSize(obj), ...validateImmutable(['data'])(obj, old)],
      },
    ),
    core(
      { plural: 'configmaps', kind: 'ConfigMap', namespaced: true, shortNames: ['cm'] },
      {
        defaults: (obj) => omitEmptyMaps(obj, ['data', 'binaryData']),
        validate: validateImmutable(['data', 'binaryData']),
      },
    ),
    core(
      { plural: 'events', kind: 'Event', namespaced: true, shortNames: ['ev'], fieldLabels: eventFields },
      { toStorage: compactEvent, fromStorage: (obj) => withZeros(obj, CORE_EVENT_ZEROS) },
    ),
    core(
      {
        plural: 'pods',
        kind: 'Pod',
        namespaced: true,
        shortNames: ['po'],
        categories: ['all'],
        statusSubresource: true,
        fieldLabels: labels(
          'spec.nodeName',
          'spec.restartPolicy',
          'spec.schedulerName',
          'spec.serviceAccountName',
          'spec.hostNetwork',
          'status.phase',
          'status.podIP',
          'status.nominatedNodeName',
        ),
      },
      {
        defaults(obj) {
          const spec = asRecord(obj.spec);
          obj.spec = spec;
          defaultPodSpec(spec);
          spec.serviceAccountName ??= 'default';
          spec.serviceAccount ??= spec.serviceAccountName;
          spec.priority ??= 0;
          spec.preemptionPolicy ??= 'PreemptLowerPriority';
        },
        returnDeletedObject: true,
        // The scheduler's binding (pkg/registry/core/pod/storage BindingREST): POST pods/NAME/binding.
        subresources: ['binding'],
        prepareForCreate(obj) {
          obj.status = { phase: 'Pending', qosClass: 'BestEffort' };
          admitPod(asRecord(obj.spec));
        },
        validate: (obj) => validatePodSpec(obj.spec, 'spec'),
      },
    ),
    core(
      {
        plural: 'nodes',
        kind: 'Node',
        namespaced: false,
        shortNames: ['no'],
        statusSubresource: true,
        fieldLabels: labels('spec.unschedulable'),
      },
      {
        // Status is kept on create: kubelet registers its Node with its status (nodeStrategy has no reset).
        defaults(obj) {
          obj.spec ??= {};
        },
      },
    ),
    serviceType(),
    core(
      {
        plural: 'serviceaccounts',
        kind: 'ServiceAccount',
        namespaced: true,
        shortNames: ['sa'],
        subresources: ['token'],
      },
      { returnDeletedObject: true },
    ),
    resourceType(
      {
        group: 'apps',
        version: 'v1',
        plural: 'deployments',
        kind: 'Deployment',
        namespaced: true,
        shortNames: ['deploy'],
        categories: ['all'],
        statusSubresource: true,
        hasGeneration: true,
      },
      {
        defaults(obj) {
          const spec = asRecord(obj.spec);
          obj.spec = spec;
          spec.replicas ??= 1;
          spec.strategy ??= { type: 'RollingUpdate' };
          const strategy = asRecord(spec.strategy);
          if (strategy.type === 'RollingUpdate')
            strategy.rollingUpdate ??= { maxUnavailable: '25%', maxSurge: '25%' };
          spec.revisionHistoryLimit ??= 10;
          spec.progressDeadlineSeconds ??= 600;
          defaultPodTemplate(spec);
        },
        prepareForCreate(obj) {
          obj.status = {};
        },
        validate: validateReplicatedPods,
      },
    ),
    resourceType(
      {
        group: 'apps',
        version: 'v1',
        plural: 'replicasets',
        kind: 'ReplicaSet',
        namespaced: true,
        shortNames: ['rs'],
        categories: ['all'],
        statusSubresource: true,
        hasGeneration: true,
      },
      {
        defaults(obj) {
          const spec = asRecord(obj.spec);
          obj.spec = spec;
          spec.replicas ??= 1;
          defaultPodTemplate(spec);
        },
        prepareForCreate(obj) {
          obj.status = { replicas: 0 };
        },
        validate: validateReplicatedPods,
      },
    ),
    resourceType({
      group: 'coordination.k8s.io',
      version: 'v1',
      plural: 'leases',
      kind: 'Lease',
      namespaced: true,
    }),
    resourceType(
      {
        group: 'events.k8s.io',
        version: 'v1',
        plural: 'events',
        kind: 'Event',
        namespaced: true,
        shortNames: ['ev'],
        storage: '/events',
        fieldLabels: eventFields,
      },
      {
        toStorage: (obj) =>
          compactEvent(
            renameFields(
              obj,
              EVENT_RENAMES.map(([a, b]) => [b, a]),
              'v1',
            ),
          ),
        fromStorage: (obj) =>
          withZeros(renameFields(obj, EVENT_RENAMES, 'events.k8s.io/v1'), EVENTS_V1_ZEROS),
        validate(obj) {
          const errs: FieldError[] = [];
          for (const f of ['eventTime', 'reportingController', 'reportingInstance', 'action', 'reason']) {
            if (!obj[f]) errs.push({ type: 'FieldValueRequired', field: f, detail: 'Required value' });
          }
          if (obj.type !== 'Normal' && obj.type !== 'Warning') {
            errs.push({
              type: 'FieldValueInvalid',
              field: 'type',
              detail: `Invalid value: "${String(obj.type ?? '')}": has invalid value: ${String(obj.type ?? '')}`,
            });
          }
          return errs;
        },
      },
    ),
    resourceType({
      group: 'apiextensions.k8s.io',
      version: 'v1',
      plural: 'customresourcedefinitions',
      kind: 'CustomResourceDefinition',
      namespaced: false,
      shortNames: ['crd', 'crds'],
      categories: ['api-extensions'],
      statusSubresource: true,
      hasGeneration: true,
    }),
    rbac('roles', 'Role', true),
    rbac('rolebindings', 'RoleBinding', true),
    rbac('clusterroles', 'ClusterRole', false),
    rbac('clusterrolebindings', 'ClusterRoleBinding', false),
    ...(
      [
        ['authorization.k8s.io', 'selfsubjectaccessreviews', 'SelfSubjectAccessReview', false],
        ['authorization.k8s.io', 'subjectaccessreviews', 'SubjectAccessReview', false],
        ['authorization.k8s.io', 'localsubjectaccessreviews', 'LocalSubjectAccessReview', true],
        ['authentication.k8s.io', 'selfsubjectreviews', 'SelfSubjectReview', false],
      ] as const
    ).map(([group, plural, kind, namespaced]) =>
      resourceType({ group, version: 'v1', plural, kind, namespaced }, { virtual: true }),
    ),
  ];
}

/** The served resource types, built-in and custom, indexed by path and by kind. */
export class ResourceRegistry {
  private readonly types: ResourceType[] = [];

  constructor(initial: ResourceType[]) {
    this.types.push(...initial);
  }

  all(): readonly ResourceType[] {
    return this.types;
  }

  add(t: ResourceType): void {
    this.remove(t.group, t.version, t.plural);
    this.types.push(t);
  }

  remove(group: string, version: string, plural: string): void {
    const i = this.types.findIndex((t) => t.group === group && t.version === version && t.plural === plural);
    if (i >= 0) this.types.splice(i, 1);
  }

  /** Removes every version of a custom resource. */
  removeCustom(crdName: string): void {
    for (let i = this.types.length - 1; i >= 0; i--)
      if (this.types[i]?.custom?.crdName === crdName) this.types.splice(i, 1);
  }

  byPlural(group: string, version: string, plural: string): ResourceType | undefined {
    return this.types.find((t) => t.group === group && t.version === version && t.plural === plural);
  }

  byKind(group: string, version: string, kind: string): ResourceType | undefined {
    return this.types.find((t) => t.group === group && t.version === version && t.kind === kind);
  }

  /** Any served version of the kind in the group (for owner references whose version is not served). */
  byGroupKind(group: string, kind: string): ResourceType | undefined {
    return this.types.find((t) => t.group === group && t.kind === kind);
  }

  /** Resolves `apiVersion` + `kind` as an owner reference names them. */
  byApiVersionKind(apiVersion: string, kind: string): ResourceType | undefined {
    const [group, version] = apiVersion.includes('/')
      ? (apiVersion.split('/', 2) as [string, string])
      : ['', apiVersion];
    return this.byKind(group, version, kind) ?? this.byGroupKind(group, kind);
  }

  /** One type per storage (the first served version), for storage-wide work (GC, namespace cleanup). */
  storages(): ResourceType[] {
    const seen = new Set<string>();
    return this.types.filter((t) => !t.virtual && !seen.has(t.storage) && seen.add(t.storage));
  }

  groups(): string[] {
    const out: string[] = [];
    for (const t of this.types) if (t.group && !out.includes(t.group)) out.push(t.group);
    return out;
  }

  versions(group: string): string[] {
    const out: string[] = [];
    for (const t of this.types) if (t.group === group && !out.includes(t.version)) out.push(t.version);
    return out;
  }

  inGroupVersion(group: string, version: string): ResourceType[] {
    return this.types.filter((t) => t.group === group && t.version === version);
  }
}
