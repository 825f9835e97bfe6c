/**
 * `Status` bodies exactly as kube-apiserver words them (k8s.io/apimachinery/pkg/api/errors).
 * Every failed request of the local API server answers with one of these.
 */

/** One entry of `Status.details.causes` (metav1.StatusCause). */
export interface StatusCause {
  reason?: string;
  message?: string;
  field?: string;
}

/** metav1.StatusDetails. `kind` is the resource (plural) for most reasons, the Kind for `Invalid`. */
export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

/** metav1.Status as serialized on the wire. */
export interface Status {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, unknown>;
  status: 'Failure' | 'Success';
  message?: string;
  reason?: string;
  details?: StatusDetails;
  code: number;
}

/** A request failure carrying the `Status` to send; thrown anywhere below the HTTP layer. */
export class ApiError extends Error {
  readonly status: Status;
  constructor(status: Omit<Status, 'kind' | 'apiVersion' | 'metadata' | 'status'>) {
    super(status.message ?? status.reason ?? `HTTP ${status.code}`);
    this.status = { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', ...status };
    if (
      this.status.details &&
      Object.keys(this.status.details).length === 0 &&
      status.reason !== 'NotFound'
    ) {
      delete this.status.details;
    }
  }
  get code(): number {
    return this.status.code;
  }
}

/** A group-qualified resource: `secrets`, `deployments.apps` (schema.GroupResource.String()). */
export interface GroupResource {
  group: string;
  resource: string;
}

export function qualified(gr: GroupResource): string {
  return gr.group ? `${gr.resource}.${gr.group}` : gr.resource;
}

function details(gr: GroupResource, name: string): StatusDetails {
  const d: StatusDetails = { name };
  if (gr.group) d.group = gr.group;
  d.kind = gr.resource;
  return d;
}

/** 404 `secrets "x" not found` (errors.NewNotFound). */
export function notFound(gr: GroupResource, name: string): ApiError {
  return new ApiError({
    message: `${qualified(gr)} "${name}" not found`,
    reason: 'NotFound',
    details: details(gr, name),
    code: 404,
  });
}

/** 409 `secrets "x" already exists` (errors.NewAlreadyExists). */
export function alreadyExists(gr: GroupResource, name: string): ApiError {
  return new ApiError({
    message: `${qualified(gr)} "${name}" already exists`,
    reason: 'AlreadyExists',
    details: details(gr, name),
    code: 409,
  });
}

/** The message of a stale-resourceVersion conflict (storage.ErrConflict → OptimisticLockErrorMsg). */
export const OPTIMISTIC_LOCK_MESSAGE =
  'the object has been modified; please apply your changes to the latest version and try again';

/** 409 `Operation cannot be fulfilled on secrets "x": <why>` (errors.NewConflict). */
export function conflict(gr: GroupResource, name: string, why: string): ApiError {
  return new ApiError({
    message: `Operation cannot be fulfilled on ${qualified(gr)} "${name}": ${why}`,
    reason: 'Conflict',
    details: details(gr, name),
    code: 409,
  });
}

/** A field error (field.Error) as used to build a 422. */
export interface FieldError {
  type:
    | 'FieldValueRequired'
    | 'FieldValueInvalid'
    | 'FieldValueNotSupported'
    | 'FieldValueForbidden'
    | 'FieldValueTooLong'
    | 'FieldValueTooMany'
    | 'FieldValueDuplicate'
    | 'FieldValueTypeInvalid';
  field: string;
  /** The text after `<field>: ` (e.g. `Required value`, `Invalid value: "x": why`). */
  detail: string;
}

/** Formats a Go value as field.Error does for `Invalid value: <v>`. */
export function goValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

export const fieldErrors = {
  required(field: string, why = ''): FieldError {
    return { type: 'FieldValueRequired', field, detail: why ? `Required value: ${why}` : 'Required value' };
  },
  invalid(field: string, value: unknown, why: string): FieldError {
    return {
      type: 'FieldValueInvalid',
      field,
      detail: `Invalid value: ${goValue(value)}${why ? `: ${why}` : ''}`,
    };
  },
  notSupported(field: string, value: unknown, supported: unknown[]): FieldError {
    return {
      type: 'FieldValueNotSupported',
      field,
      detail: `Unsupported value: ${goValue(value)}: supported values: ${supported.map(goValue).join(', ')}`,
    };
  },
  forbidden(field: string, why: string): FieldError {
    return { type: 'FieldValueForbidden', field, detail: `Forbidden: ${why}` };
  },
};

/**
 * 422 `Secret "x" is invalid: metadata.name: Invalid value: ...` (errors.NewInvalid): `details.kind`
 * is the Kind, `details.group` the API group, one cause per field error.
 */
export function invalid(kind: string, group: string, name: string, errs: FieldError[]): ApiError {
  const texts = errs.map((e) => `${e.field}: ${e.detail}`);
  const joined = texts.length === 1 ? texts[0] : `[${texts.join(', ')}]`;
  const d: StatusDetails = { name };
  if (group) d.group = group;
  d.kind = kind;
  d.causes = errs.map((e) => ({ reason: e.type, message: e.detail, field: e.field }));
  return new ApiError({
    message: `${kind}${group ? `.${group}` : ''} "${name}" is invalid: ${joined}`,
    reason: 'Invalid',
    details: d,
    code: 422,
  });
}

/** 400 BadRequest with a free-form message (errors.NewBadRequest). */
export function badRequest(message: string): ApiError {
  return new ApiError({ message, reason: 'BadRequest', code: 400 });
}

/** 403 Forbidden (errors.NewForbidden): `secrets "x" is forbidden: <why>`. */
export function forbidden(gr: GroupResource, name: string, why: string, causes?: StatusCause[]): ApiError {
  const subject = name ? `${qualified(gr)} "${name}"` : qualified(gr);
  const d: StatusDetails = {};
  if (name) d.name = name;
  if (gr.group) d.group = gr.group;
  d.kind = gr.resource;
  if (causes) d.causes = causes;
  return new ApiError({
    message: `${subject} is forbidden: ${why}`,
    reason: 'Forbidden',
    details: d,
    code: 403,
  });
}

/** 404 for an unknown path or resource: `the server could not find the requested resource`. */
export function pathNotFound(): ApiError {
  return new ApiError({
    message: 'the server could not find the requested resource',
    reason: 'NotFound',
    details: {},
    code: 404,
  });
}

/** 405 for a verb the resource or path does not serve (the REST handler's MethodNotAllowed). */
export function methodNotAllowed(): ApiError {
  return new ApiError({
    message: 'the server does not allow this method on the requested resource',
    reason: 'MethodNotAllowed',
    details: {},
    code: 405,
  });
}

/** 410 Expired for a resourceVersion older than the kept history (watch cache: "too old resource version"). */
export function tooOldResourceVersion(requested: number, oldest: number): ApiError {
  return new ApiError({
    message: `too old resource version: ${requested} (${oldest})`,
    reason: 'Expired',
    code: 410,
  });
}

/** 410 Expired for a continue token whose snapshot is compacted (storage.ErrCompacted on a continued list). */
export function continueExpired(): ApiError {
  return new ApiError({
    message:
      'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
    reason: 'Expired',
    code: 410,
  });
}

/** 500 (errors.NewInternalError): `Internal error occurred: <why>`. */
export function internalError(why: string): ApiError {
  return new ApiError({
    message: `Internal error occurred: ${why}`,
    reason: 'InternalError',
    details: { causes: [{ message: why }] },
    code: 500,
  });
}

/** 401 as the authentication filter returns it. */
export function unauthorized(): ApiError {
  return new ApiError({ message: 'Unauthorized', reason: 'Unauthorized', code: 401 });
}

/** A status for a given HTTP code, worded as kube-apiserver's generic responses (errors.NewGenericServerResponse). */
export function genericStatus(code: number, retryAfterSeconds?: number): ApiError {
  const table: Record<number, [string, string]> = {
    409: ['Conflict', 'the server reported a conflict'],
    429: ['TooManyRequests', 'Too many requests, please try again later.'],
    500: ['InternalError', 'an error on the server ("unknown") has prevented the request from succeeding'],
    503: ['ServiceUnavailable', 'the server is currently unable to handle the request'],
    504: [
      'Timeout',
      'the server was unable to return a response in the time allotted, but may still be processing the request',
    ],
    404: ['NotFound', 'the server could not find the requested resource'],
    403: ['Forbidden', 'forbidden'],
    400: ['BadRequest', 'the server rejected our request for an unknown reason'],
  };
  const [reason, message] = table[code] ?? [
    'Unknown',
    `the server responded with the status code ${code} but did not return more information`,
  ];
  const details: StatusDetails = {};
  if (retryAfterSeconds !== undefined) details.retryAfterSeconds = retryAfterSeconds;
  return new ApiError({ message, reason, details, code });
}

/** 200 `Status: Success` returned by DELETE of an object deleted at once (genericregistry.Store.finalizeDelete). */
export function deleteSuccess(gr: GroupResource, name: string, uid: string): Omit<Status, 'code'> {
  const d: StatusDetails = { name };
  if (gr.group) d.group = gr.group;
  d.kind = gr.resource;
  d.uid = uid;
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: d };
}
