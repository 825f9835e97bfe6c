/**
 * Decoding of Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`: the `k8s\0`
 * envelope around runtime.Unknown) for the types kubectl's imperative commands send that way —
 * `kubectl create secret|configmap|namespace|serviceaccount|role|rolebinding|clusterrole|
 * clusterrolebinding|token`, `kubectl auth can-i` and the DeleteOptions of `kubectl delete`. Field numbers are those of
 * k8s.io/api and k8s.io/apimachinery `generated.proto`. Other kinds answer 415, as a server without
 * that type's protobuf would.
 */
import { ApiError } from './status.ts';

type Field = { name: string; type: FieldType; repeated?: boolean };
type FieldType = 'string' | 'bytes' | 'int' | 'bool' | 'time' | 'map' | 'bytesMap' | Schema;
type Schema = Record<number, Field>;

const time: FieldType = 'time';
const OwnerReference: Schema = {
  1: { name: 'kind', type: 'string' },
  3: { name: 'name', type: 'string' },
  4: { name: 'uid', type: 'string' },
  5: { name: 'apiVersion', type: 'string' },
  6: { name: 'controller', type: 'bool' },
  7: { name: 'blockOwnerDeletion', type: 'bool' },
};
const ObjectMeta: Schema = {
  1: { name: 'name', type: 'string' },
  2: { name: 'generateName', type: 'string' },
  3: { name: 'namespace', type: 'string' },
  5: { name: 'uid', type: 'string' },
  6: { name: 'resourceVersion', type: 'string' },
  7: { name: 'generation', type: 'int' },
  8: { name: 'creationTimestamp', type: time },
  9: { name: 'deletionTimestamp', type: time },
  10: { name: 'deletionGracePeriodSeconds', type: 'int' },
  11: { name: 'labels', type: 'map' },
  12: { name: 'annotations', type: 'map' },
  13: { name: 'ownerReferences', type: OwnerReference, repeated: true },
  14: { name: 'finalizers', type: 'string', repeated: true },
};
const meta: Field = { name: 'metadata', type: ObjectMeta };
const PolicyRule: Schema = {
  1: { name: 'verbs', type: 'string', repeated: true },
  2: { name: 'apiGroups', type: 'string', repeated: true },
  3: { name: 'resources', type: 'string', repeated: true },
  4: { name: 'resourceNames', type: 'string', repeated: true },
  5: { name: 'nonResourceURLs', type: 'string', repeated: true },
};
const Binding: Schema = {
  1: meta,
  2: {
    name: 'subjects',
    repeated: true,
    type: {
      1: { name: 'kind', type: 'string' },
      2: { name: 'apiGroup', type: 'string' },
      3: { name: 'name', type: 'string' },
      4: { name: 'namespace', type: 'string' },
    },
  },
  3: {
    name: 'roleRef',
    type: {
      1: { name: 'apiGroup', type: 'string' },
      2: { name: 'kind', type: 'string' },
      3: { name: 'name', type: 'string' },
    },
  },
};

/** Schemas by `apiVersion/kind`. */
const SCHEMAS: Record<string, Schema> = {
  'v1/Secret': {
    1: meta,
    2: { name: 'data', type: 'bytesMap' },
    3: { name: 'type', type: 'string' },
    4: { name: 'stringData', type: 'map' },
    5: { name: 'immutable', type: 'bool' },
  },
  'v1/ConfigMap': {
    1: meta,
    2: { name: 'data', type: 'map' },
    3: { name: 'binaryData', type: 'bytesMap' },
    4: { name: 'immutable', type: 'bool' },
  },
  'v1/Namespace': {
    1: meta,
    2: { name: 'spec', type: { 1: { name: 'finalizers', type: 'string', repeated: true } } },
  },
  'v1/ServiceAccount': {
    1: meta,
    2: {
      name: 'secrets',
      repeated: true,
      type: {
        1: { name: 'kind', type: 'string' },
        2: { name: 'namespace', type: 'string' },
        3: { name: 'name', type: 'string' },
        4: { name: 'uid', type: 'string' },
      },
    },
    3: { name: 'imagePullSecrets', repeated: true, type: { 1: { name: 'name', type: 'string' } } },
    4: { name: 'automountServiceAccountToken', type: 'bool' },
  },
  'v1/DeleteOptions': {
    1: { name: 'gracePeriodSeconds', type: 'int' },
    2: {
      name: 'preconditions',
      type: { 1: { name: 'uid', type: 'string' }, 2: { name: 'resourceVersion', type: 'string' } },
    },
    3: { name: 'orphanDependents', type: 'bool' },
    4: { name: 'propagationPolicy', type: 'string' },
    5: { name: 'dryRun', type: 'string', repeated: true },
  },
  'meta.k8s.io/v1/DeleteOptions': {},
  'rbac.authorization.k8s.io/v1/Role': { 1: meta, 2: { name: 'rules', type: PolicyRule, repeated: true } },
  'rbac.authorization.k8s.io/v1/ClusterRole': {
    1: meta,
    2: { name: 'rules', type: PolicyRule, repeated: true },
  },
  'rbac.authorization.k8s.io/v1/RoleBinding': Binding,
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': Binding,
  'authentication.k8s.io/v1/TokenRequest': {
    1: meta,
    2: {
      name: 'spec',
      type: {
        1: { name: 'audiences', type: 'string', repeated: true },
        4: { name: 'expirationSeconds', type: 'int' },
      },
    },
  },
  'authentication.k8s.io/v1/SelfSubjectReview': { 1: meta },
  'authorization.k8s.io/v1/SelfSubjectAccessReview': {
    1: meta,
    2: {
      name: 'spec',
      type: {
        1: {
          name: 'resourceAttributes',
          type: {
            1: { name: 'namespace', type: 'string' },
            2: { name: 'verb', type: 'string' },
            3: { name: 'group', type: 'string' },
            4: { name: 'version', type: 'string' },
            5: { name: 'resource', type: 'string' },
            6: { name: 'subresource', type: 'string' },
            7: { name: 'name', type: 'string' },
          },
        },
        2: {
          name: 'nonResourceAttributes',
          type: { 1: { name: 'path', type: 'string' }, 2: { name: 'verb', type: 'string' } },
        },
      },
    },
  },
};
SCHEMAS['meta.k8s.io/v1/DeleteOptions'] = SCHEMAS['v1/DeleteOptions'] as Schema;

class Reader {
  pos = 0;
  readonly buf: Buffer;
  constructor(buf: Buffer) {
    this.buf = buf;
  }
  done(): boolean {
    return this.pos >= this.buf.length;
  }
  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = this.buf[this.pos++];
      if (b === undefined) throw new Error('truncated varint');
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
  }
  bytes(): Buffer {
    const len = Number(this.varint());
    const out = this.buf.subarray(this.pos, this.pos + len);
    this.pos += len;
    return out;
  }
  skip(wire: number): void {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

function decodeTime(buf: Buffer): string {
  const r = new Reader(buf);
  let seconds = 0n;
  while (!r.done()) {
    const tag = Number(r.varint());
    if (tag >>> 3 === 1 && (tag & 7) === 0) seconds = BigInt.asIntN(64, r.varint());
    else r.skip(tag & 7);
  }
  return new Date(Number(seconds) * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function decodeMapEntry(buf: Buffer, bytesValue: boolean): [string, string] {
  const r = new Reader(buf);
  let key = '';
  let value = '';
  while (!r.done()) {
    const tag = Number(r.varint());
    const field = tag >>> 3;
    if ((tag & 7) !== 2) {
      r.skip(tag & 7);
      continue;
    }
    const b = r.bytes();
    if (field === 1) key = b.toString('utf8');
    else if (field === 2) value = bytesValue ? b.toString('base64') : b.toString('utf8');
  }
  return [key, value];
}

function decodeMessage(buf: Buffer, schema: Schema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const r = new Reader(buf);
  while (!r.done()) {
    const tag = Number(r.varint());
    const wire = tag & 7;
    const f = schema[tag >>> 3];
    if (!f) {
      r.skip(wire);
      continue;
    }
    let value: unknown;
    if (f.type === 'int') value = Number(BigInt.asIntN(64, r.varint()));
    else if (f.type === 'bool') value = r.varint() !== 0n;
    else {
      const b = r.bytes();
      if (f.type === 'string') value = b.toString('utf8');
      else if (f.type === 'bytes') value = b.toString('base64');
      else if (f.type === 'time') value = decodeTime(b);
      else if (f.type === 'map' || f.type === 'bytesMap') {
        const [k, v] = decodeMapEntry(b, f.type === 'bytesMap');
        const m = (out[f.name] ?? {}) as Record<string, string>;
        m[k] = v;
        out[f.name] = m;
        continue;
      } else value = decodeMessage(b, f.type);
    }
    if (f.repeated) {
      const list = (out[f.name] ?? []) as unknown[];
      list.push(value);
      out[f.name] = list;
    } else out[f.name] = value;
  }
  return out;
}

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/**
 * Decodes a protobuf-encoded Kubernetes object into its JSON form.
 * @throws ApiError 415 for an unknown kind, 400 for a malformed body
 */
export function decodeProtobuf(body: Buffer): Record<string, unknown> {
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC))
    throw protobufError(
      'provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]',
    );
  try {
    const unknown = decodeMessage(body.subarray(4), {
      1: {
        name: 'typeMeta',
        type: { 1: { name: 'apiVersion', type: 'string' }, 2: { name: 'kind', type: 'string' } },
      },
      2: { name: 'raw', type: 'bytes' },
    });
    const typeMeta = (unknown.typeMeta ?? {}) as { apiVersion?: string; kind?: string };
    const schema = SCHEMAS[`${typeMeta.apiVersion}/${typeMeta.kind}`];
    if (!schema) {
      throw new ApiError({
        message: `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (protobuf is decoded for ${Object.keys(SCHEMAS).join(', ')} only)`,
        reason: 'UnsupportedMediaType',
        code: 415,
      });
    }
    const obj = decodeMessage(Buffer.from(String(unknown.raw ?? ''), 'base64'), schema);
    return { apiVersion: typeMeta.apiVersion, kind: typeMeta.kind, ...obj };
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw protobufError(err instanceof Error ? err.message : String(err));
  }
}

function protobufError(why: string): ApiError {
  return new ApiError({ message: `error decoding protobuf body: ${why}`, reason: 'BadRequest', code: 400 });
}
