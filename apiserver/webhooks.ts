/**
 * Admission webhooks as kube-apiserver calls them (k8s.io/apiserver/pkg/admission/plugin/webhook:
 * `generic.Webhook.ShouldCallHook` for which webhooks match, `mutating.mutatingDispatcher` and
 * `validating.validatingDispatcher` for the calls, `errors.ToStatusErr` for a denial's words,
 * `webhookutil.ErrCallingWebhook` for a failed call). The registered
 * admissionregistration.k8s.io/v1 `MutatingWebhookConfiguration`s and
 * `ValidatingWebhookConfiguration`s are read from the store at each write; a write to a matching
 * resource goes:
 *
 * 1. mutating webhooks, in configuration-name then list order, one at a time, each `JSONPatch`
 *    applied to the object the next one sees; when a later one changed the object, those with
 *    `reinvocationPolicy: IfNeeded` are called once more (kube-apiserver's reinvocation);
 * 2. the write itself as a dry run: defaults, the schema and every other check of the registry
 *    (a refusal there is the client's answer, as kube-apiserver's validation after mutation);
 * 3. validating webhooks, all at once, on the dry run's object: the first denial is the answer;
 * 4. the write, with the mutated object (unless the request was itself a dry run).
 *
 * Each webhook is called with the request's `dryRun` (one whose `sideEffects` is neither `None` nor
 * `NoneOnDryRun` refuses a dry run with 400), at its `clientConfig.url` over HTTPS trusting
 * `clientConfig.caBundle` (or the system's CAs), within its `timeoutSeconds` (default 10); a call
 * that fails (unreachable, timed out, a non-2xx answer, an answer with the wrong `uid`, a patch that
 * does not apply) is refused with 500 `failed calling webhook` under `failurePolicy: Fail` (the
 * default) and ignored under `Ignore`. Warnings of every webhook go to the client as `Warning`
 * headers. `rules` (operations, groups, versions, resources incl. `plural/subresource` and `*`,
 * scope), `namespaceSelector` (the namespace's labels; the Namespace's own for a Namespace;
 * cluster-scoped objects always match) and `objectSelector` (the object's or the old object's
 * labels) decide which webhooks a request meets; admissionregistration's own objects meet none. A
 * webhook configuration is validated on its writes ({@link webhookConfigurationErrors}).
 *
 * Where it differs from kube-apiserver (apiserver/README.md): a patch or status write whose
 * mutating webhooks change the object is stored as an update of the whole object (its
 * managedFields an `Update` of the request's manager; an apply stays an apply, the webhooks'
 * fields added to its configuration: {@link applyWithWebhookFields}); a DELETE meets the
 * validating webhooks only; `clientConfig.service` is not served (no Service has endpoints here);
 * `matchPolicy: Equivalent` matches what `Exact` does (each resource is served at one version);
 * `matchConditions` are not evaluated; a patch and apply call mutating webhooks after the patch is
 * applied and the result checked against the schema (kube-apiserver checks after mutation).
 */
import { randomUUID } from 'node:crypto';
import { request as httpsRequest } from 'node:https';
import fjp from 'fast-json-patch';
import type { UserInfo } from './rbac.ts';
import type { Registry } from './registry.ts';
import type { KubeObject, ResourceType } from './resources.ts';
import { parseLabelSelector } from './selectors.ts';
import { ApiError, badRequest, type FieldError, fieldErrors, internalError, invalid } from './status.ts';

/** kube-apiserver's default `timeoutSeconds` of a webhook (admissionregistration/v1 defaults). */
export const DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 10;

type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** One webhook of a stored configuration (the fields read here). */
interface Webhook {
  name: string;
  clientConfig?: { url?: string; caBundle?: string; service?: unknown };
  rules?: {
    operations?: string[];
    apiGroups?: string[];
    apiVersions?: string[];
    resources?: string[];
    scope?: string;
  }[];
  failurePolicy?: 'Fail' | 'Ignore';
  namespaceSelector?: Selector;
  objectSelector?: Selector;
  sideEffects?: string;
  timeoutSeconds?: number;
  reinvocationPolicy?: 'Never' | 'IfNeeded';
}

/** A webhook in the order kube-apiserver calls them: configurations sorted by name, then list order. */
interface Hook {
  configuration: string;
  webhook: Webhook;
}

/** What a write is, as an AdmissionRequest says it. */
export interface AdmissionAttributes {
  t: ResourceType;
  operation: Operation;
  /** `undefined` for a cluster-scoped object. */
  namespace: string | undefined;
  name: string;
  subresource?: string;
  user: UserInfo;
  dryRun: boolean;
  /** The stored object (UPDATE, DELETE). */
  oldObject?: KubeObject;
  /** The operation's options, as the AdmissionRequest carries them. */
  options?: Record<string, unknown>;
}

/**
 * The write the admission wraps: `scratch` true is a dry run whose result only feeds the validating
 * webhooks (its warnings dropped); false is the write as the request asked it (a dry run if it did).
 */
export type Write<T> = (object: KubeObject | undefined, scratch: boolean) => T;

/**
 * An apply configuration with the fields mutating webhooks added or changed in `mutated` (compared
 * with `patched`, the object the apply made), so that applying it leaves the webhooks' fields owned
 * by the applier, as kube-apiserver attributes an admission's changes to the request's manager.
 * `undefined` when the change cannot be said in an apply configuration (a removal, a path through
 * a list): the caller then stores the object whole.
 */
export function applyWithWebhookFields(
  configuration: unknown,
  patched: KubeObject,
  mutated: KubeObject,
): Record<string, unknown> | undefined {
  if (typeof configuration !== 'object' || configuration === null || Array.isArray(configuration))
    return undefined;
  const result = structuredClone(configuration) as Record<string, unknown>;
  for (const op of fjp.compare(patched, mutated)) {
    if (op.op !== 'add' && op.op !== 'replace') return undefined;
    const path = op.path
      .split('/')
      .slice(1)
      .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
    let node: Record<string, unknown> = result;
    for (const [i, key] of path.entries()) {
      if (i === path.length - 1) {
        node[key] = structuredClone(op.value);
        break;
      }
      const next = node[key] ?? {};
      if (typeof next !== 'object' || next === null || Array.isArray(next)) return undefined;
      node[key] = next;
      node = next as Record<string, unknown>;
    }
  }
  return result;
}

/** A failed call: `failed calling webhook "<name>": <why>` (webhookutil.ErrCallingWebhook). */
class CallError extends Error {}

/**
 * A matcher of a metav1.LabelSelector object, through the string selector parser (matchLabels
 * `k=v`, `In`, `NotIn`, `Exists`, `DoesNotExist`). An absent selector matches everything.
 */
function selectorMatches(
  selector: Selector | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (!selector) return true;
  const parts = Object.entries(selector.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`);
  for (const e of selector.matchExpressions ?? []) {
    const values = (e.values ?? []).join(',');
    if (e.operator === 'In') parts.push(`${e.key} in (${values})`);
    else if (e.operator === 'NotIn') parts.push(`${e.key} notin (${values})`);
    else if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
  }
  return parseLabelSelector(parts.join(',')).matches(labels ?? {});
}

function matchesAny(list: string[] | undefined, value: string): boolean {
  return (list ?? []).some((v) => v === '*' || v === value);
}

/** Does a rule's `resources` entry cover `plural` and `subresource` (rules.Matcher.resource)? */
function resourceMatches(
  entries: string[] | undefined,
  plural: string,
  subresource: string | undefined,
): boolean {
  const want = subresource ? `${plural}/${subresource}` : plural;
  return (entries ?? []).some((e) => {
    if (e === '*/*' || e === want) return true;
    const [res, sub] = e.split('/');
    if (sub === undefined) return e === '*' && !subresource;
    return (
      (res === '*' && sub === subresource) || (res === plural && sub === '*' && subresource !== undefined)
    );
  });
}

function ruleMatches(webhook: Webhook, a: AdmissionAttributes): boolean {
  return (webhook.rules ?? []).some(
    (r) =>
      matchesAny(r.operations, a.operation) &&
      matchesAny(r.apiGroups, a.t.group) &&
      matchesAny(r.apiVersions, a.t.version) &&
      resourceMatches(r.resources, a.t.plural, a.subresource) &&
      (r.scope === undefined || r.scope === '*' || r.scope === (a.t.namespaced ? 'Namespaced' : 'Cluster')),
  );
}

/** The webhook configuration kinds: validated as kube-apiserver validates them, and never sent to a webhook. */
const CONFIGURATION_KINDS: Record<string, 'Mutating' | 'Validating'> = {
  mutatingwebhookconfigurations: 'Mutating',
  validatingwebhookconfigurations: 'Validating',
};

/**
 * Whether `t` is exempt from admission webhooks, as kube-apiserver exempts the admission
 * configuration resources (generic `IsExemptAdmissionConfigurationResource`): a webhook must not
 * be able to block its own repair.
 */
function isExempt(t: ResourceType): boolean {
  return t.group === 'admissionregistration.k8s.io';
}

/** The label selector operators metav1validation accepts. */
const SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

/** `IsFullyQualifiedName`: a DNS-1123 subdomain of at least three labels. */
function fullyQualifiedNameErrors(field: string, name: string): FieldError[] {
  if (!name) return [fieldErrors.required(field, '')];
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(name) || name.length > 253)
    return [
      fieldErrors.invalid(
        field,
        name,
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      ),
    ];
  if (name.split('.').length < 3)
    return [
      fieldErrors.invalid(field, name, 'should be a domain with at least three segments separated by dots'),
    ];
  return [];
}

/**
 * The field errors of a webhook configuration, as kube-apiserver's admissionregistration validation
 * finds them on create (`ValidateValidatingWebhookConfiguration`, `ValidateMutatingWebhookConfiguration`,
 * webhook `ValidateWebhookURL`): fully qualified and unique webhook names, `sideEffects` required and
 * `None` or `NoneOnDryRun`, `timeoutSeconds` 1–30, `admissionReviewVersions` with `v1` or `v1beta1`,
 * exactly one of `clientConfig.url` (https, no user, query or fragment) and `clientConfig.service`,
 * the policies' values, operations, and selector operators. Not checked: `matchConditions` (CEL),
 * the resources' wildcard combinations.
 */
export function webhookConfigurationErrors(kind: 'Mutating' | 'Validating', obj: KubeObject): FieldError[] {
  const errs: FieldError[] = [];
  const names = new Set<string>();
  const hooks = ((obj as { webhooks?: unknown }).webhooks ?? []) as (Webhook & {
    admissionReviewVersions?: string[];
    matchPolicy?: string;
  })[];
  hooks.forEach((h, i) => {
    const at = `webhooks[${i}]`;
    errs.push(...fullyQualifiedNameErrors(`${at}.name`, h.name ?? ''));
    if (h.name && names.has(h.name))
      errs.push({
        type: 'FieldValueDuplicate',
        field: `${at}.name`,
        detail: `Duplicate value: ${JSON.stringify(h.name)}`,
      });
    names.add(h.name);
    (h.rules ?? []).forEach((r, j) => {
      const rule = `${at}.rules[${j}]`;
      if (!r.operations?.length) errs.push(fieldErrors.required(`${rule}.operations`));
      for (const [k, op] of (r.operations ?? []).entries())
        if (!['*', 'CREATE', 'UPDATE', 'DELETE', 'CONNECT'].includes(op))
          errs.push(
            fieldErrors.notSupported(`${rule}.operations[${k}]`, op, [
              '*',
              'CONNECT',
              'CREATE',
              'DELETE',
              'UPDATE',
            ]),
          );
      if (!r.apiGroups?.length) errs.push(fieldErrors.required(`${rule}.apiGroups`));
      if (!r.apiVersions?.length) errs.push(fieldErrors.required(`${rule}.apiVersions`));
      if (!r.resources?.length) errs.push(fieldErrors.required(`${rule}.resources`));
      if (r.scope !== undefined && !['*', 'Cluster', 'Namespaced'].includes(r.scope))
        errs.push(fieldErrors.notSupported(`${rule}.scope`, r.scope, ['*', 'Cluster', 'Namespaced']));
    });
    if (h.failurePolicy !== undefined && !['Fail', 'Ignore'].includes(h.failurePolicy))
      errs.push(fieldErrors.notSupported(`${at}.failurePolicy`, h.failurePolicy, ['Fail', 'Ignore']));
    if (h.matchPolicy !== undefined && !['Equivalent', 'Exact'].includes(h.matchPolicy))
      errs.push(fieldErrors.notSupported(`${at}.matchPolicy`, h.matchPolicy, ['Equivalent', 'Exact']));
    if (h.sideEffects === undefined)
      errs.push(fieldErrors.required(`${at}.sideEffects`, 'must specify one of None, NoneOnDryRun'));
    else if (!['None', 'NoneOnDryRun'].includes(h.sideEffects))
      errs.push(fieldErrors.notSupported(`${at}.sideEffects`, h.sideEffects, ['None', 'NoneOnDryRun']));
    if (h.timeoutSeconds !== undefined && (h.timeoutSeconds > 30 || h.timeoutSeconds < 1))
      errs.push(
        fieldErrors.invalid(
          `${at}.timeoutSeconds`,
          h.timeoutSeconds,
          'the timeout value must be between 1 and 30 seconds',
        ),
      );
    for (const [field, selector] of [
      ['namespaceSelector', h.namespaceSelector],
      ['objectSelector', h.objectSelector],
    ] as const)
      for (const [k, e] of (selector?.matchExpressions ?? []).entries())
        if (!SELECTOR_OPERATORS.includes(e.operator))
          errs.push(
            fieldErrors.invalid(
              `${at}.${field}.matchExpressions[${k}].operator`,
              e.operator,
              'not a valid selector operator',
            ),
          );
    if (
      kind === 'Mutating' &&
      h.reinvocationPolicy !== undefined &&
      !['IfNeeded', 'Never'].includes(h.reinvocationPolicy)
    )
      errs.push(
        fieldErrors.notSupported(`${at}.reinvocationPolicy`, h.reinvocationPolicy, ['IfNeeded', 'Never']),
      );
    const versions = h.admissionReviewVersions ?? [];
    if (versions.length === 0)
      errs.push(fieldErrors.required(`${at}.admissionReviewVersions`, 'must specify one of v1, v1beta1'));
    else if (!versions.some((v) => v === 'v1' || v === 'v1beta1'))
      errs.push(
        fieldErrors.invalid(
          `${at}.admissionReviewVersions`,
          versions,
          'must include at least one of v1, v1beta1',
        ),
      );
    const cc = h.clientConfig ?? {};
    if ((cc.url === undefined) === (cc.service === undefined))
      errs.push(fieldErrors.required(`${at}.clientConfig`, 'exactly one of url or service is required'));
    else if (cc.url !== undefined) {
      const field = `${at}.clientConfig.url`;
      let url: URL | undefined;
      try {
        url = new URL(cc.url);
      } catch {
        errs.push(fieldErrors.invalid(field, cc.url, 'host must be specified'));
      }
      if (url && url.protocol !== 'https:')
        errs.push(fieldErrors.invalid(field, cc.url, "'https' is the only allowed URL scheme"));
      else if (url && (url.username || url.password))
        errs.push(fieldErrors.invalid(field, cc.url, 'user information is not permitted in the URL'));
      else if (url && (url.search || url.hash))
        errs.push(
          fieldErrors.invalid(
            field,
            cc.url,
            url.hash
              ? 'fragments are not permitted in the URL'
              : 'query parameters are not permitted in the URL',
          ),
        );
    }
  });
  return errs;
}

/** The admission webhooks of one local API server (this file's docstring). */
export class AdmissionWebhooks {
  readonly #registry: Registry;

  constructor(registry: Registry) {
    this.#registry = registry;
  }

  #hooks(plural: 'mutatingwebhookconfigurations' | 'validatingwebhookconfigurations'): Hook[] {
    const t = this.#registry.resources.byPlural('admissionregistration.k8s.io', 'v1', plural);
    if (!t) return [];
    return this.#registry.store
      .list(t.storage)
      .map((c) => ({ name: c.metadata.name ?? '', webhooks: (c as { webhooks?: Webhook[] }).webhooks ?? [] }))
      .sort((x, y) => x.name.localeCompare(y.name))
      .flatMap((c) => c.webhooks.map((webhook) => ({ configuration: c.name, webhook })));
  }

  #namespaceLabels(
    a: AdmissionAttributes,
    object: KubeObject | undefined,
  ): Record<string, string> | undefined {
    if (a.t.group === '' && a.t.plural === 'namespaces') return (object ?? a.oldObject)?.metadata.labels;
    if (!a.namespace) return undefined;
    const nsType = this.#registry.resources.byPlural('', 'v1', 'namespaces');
    const ns = nsType ? this.#registry.store.get(nsType.storage, a.namespace) : undefined;
    return ns?.metadata.labels ?? { 'kubernetes.io/metadata.name': a.namespace };
  }

  /** The webhooks a request meets (generic.Webhook.ShouldCallHook). */
  #matching(hooks: Hook[], a: AdmissionAttributes, object: KubeObject | undefined): Hook[] {
    return hooks.filter(({ webhook }) => {
      if (!ruleMatches(webhook, a)) return false;
      const namespaced = a.t.namespaced || (a.t.group === '' && a.t.plural === 'namespaces');
      if (namespaced && !selectorMatches(webhook.namespaceSelector, this.#namespaceLabels(a, object)))
        return false;
      return (
        selectorMatches(webhook.objectSelector, object?.metadata.labels) ||
        (a.oldObject !== undefined && selectorMatches(webhook.objectSelector, a.oldObject.metadata.labels))
      );
    });
  }

  /** Whether any webhook configuration is registered (a write then runs as before, without a read more). */
  registered(): boolean {
    return ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations'].some((plural) => {
      const t = this.#registry.resources.byPlural('admissionregistration.k8s.io', 'v1', plural);
      let found = false;
      if (t)
        this.#registry.store.walk(t.storage, {}, () => {
          found = true;
          return false;
        });
      return found;
    });
  }

  /**
   * Whether a registered webhook's rules and namespace selector meet a request of `a`, whatever the
   * object's labels: a patch computes the object webhooks would see only then.
   */
  mayMeet(a: AdmissionAttributes): boolean {
    if (CONFIGURATION_KINDS[a.t.plural] && a.t.group === 'admissionregistration.k8s.io') return true; // validated
    if (isExempt(a.t)) return false;
    const unselected = (hooks: Hook[]) =>
      hooks.map(({ configuration, webhook }) => ({
        configuration,
        webhook: { ...webhook, objectSelector: undefined },
      }));
    return (
      this.#matching(unselected(this.#hooks('mutatingwebhookconfigurations')), a, undefined).length > 0 ||
      this.#matching(unselected(this.#hooks('validatingwebhookconfigurations')), a, undefined).length > 0
    );
  }

  /** Whether any registered webhook meets a request of `a` (a write with none runs unchanged). */
  has(a: AdmissionAttributes, object: KubeObject | undefined): boolean {
    if (isExempt(a.t)) return false;
    return (
      this.#matching(this.#hooks('mutatingwebhookconfigurations'), a, object).length > 0 ||
      this.#matching(this.#hooks('validatingwebhookconfigurations'), a, object).length > 0
    );
  }

  /**
   * Runs a write through the admission chain (this file's docstring); a write no webhook meets runs
   * once, unchanged.
   * @param object the object the request asks to store (`undefined` for DELETE)
   * @param write the registry's write of an object, as a dry run or for real
   * @param stored the object a write's result holds (what validating webhooks see)
   * @param warnings where the webhooks' warnings go (the response's `Warning` headers)
   * @returns what `write(object, false)` returned: the write as the request asked it
   * @throws {ApiError} a webhook's denial (kube-apiserver's words), a failed call under `Fail` (500),
   *   a dry run a webhook with side effects cannot take (400), or what the write throws
   */
  async admit<T>(
    a: AdmissionAttributes,
    object: KubeObject | undefined,
    write: Write<T>,
    stored: (result: T) => KubeObject | undefined,
    warnings: string[],
  ): Promise<T> {
    const configuration =
      a.t.group === 'admissionregistration.k8s.io' ? CONFIGURATION_KINDS[a.t.plural] : undefined;
    if (configuration && object && a.operation !== 'DELETE') {
      const errs = webhookConfigurationErrors(configuration, object);
      if (errs.length)
        throw invalid(
          `${configuration}WebhookConfiguration`,
          a.t.group,
          object.metadata.name ?? a.name,
          errs,
        );
    }
    if (!this.has(a, object)) return write(object, false);
    const mutating = this.#matching(this.#hooks('mutatingwebhookconfigurations'), a, object);
    let current = object;
    if (object !== undefined && a.operation !== 'DELETE' && mutating.length > 0) {
      const changedAfter = new Map<Hook, boolean>();
      for (const hook of mutating) {
        const next = await this.#mutate(hook, a, current as KubeObject, warnings);
        if (next !== current) for (const [h] of changedAfter) changedAfter.set(h, true);
        changedAfter.set(hook, false);
        current = next;
      }
      // Reinvocation: once more, each IfNeeded webhook that a later one's change came after.
      for (const hook of mutating)
        if (hook.webhook.reinvocationPolicy === 'IfNeeded' && changedAfter.get(hook))
          current = await this.#mutate(hook, a, current as KubeObject, warnings);
    }
    const candidate = write(current, true);
    const subject = a.operation === 'DELETE' ? undefined : stored(candidate);
    const validating = this.#matching(this.#hooks('validatingwebhookconfigurations'), a, subject);
    const denials = await Promise.all(validating.map((hook) => this.#validate(hook, a, subject, warnings)));
    const denial = denials.find((d) => d !== undefined);
    if (denial) throw denial;
    return write(current, false);
  }

  async #mutate(
    hook: Hook,
    a: AdmissionAttributes,
    object: KubeObject,
    warnings: string[],
  ): Promise<KubeObject> {
    const result = await this.#call(hook, a, object, warnings);
    if (result instanceof ApiError) throw result;
    if (result === undefined) return object;
    if (!result.allowed) throw deniedError(hook.webhook.name, result.status);
    if (!result.patch) return object;
    try {
      if (result.patchType !== 'JSONPatch')
        throw new CallError(`unsupported patch type "${result.patchType}"`);
      const ops = JSON.parse(Buffer.from(result.patch, 'base64').toString('utf8')) as fjp.Operation[];
      return fjp.applyPatch(structuredClone(object), ops, true, false).newDocument;
    } catch (err) {
      const failed = callFailure(hook.webhook, (err as Error).message);
      if (failed) throw failed;
      return object;
    }
  }

  async #validate(
    hook: Hook,
    a: AdmissionAttributes,
    object: KubeObject | undefined,
    warnings: string[],
  ): Promise<ApiError | undefined> {
    const result = await this.#call(hook, a, object, warnings);
    if (result instanceof ApiError) return result;
    if (result === undefined || result.allowed) return undefined;
    return deniedError(hook.webhook.name, result.status);
  }

  /**
   * One call: the AdmissionReview POSTed, its answer checked.
   * @returns the response; `undefined` when the call failed and the policy is `Ignore`; an
   *   {@link ApiError} when it failed under `Fail` or the webhook cannot take a dry run
   */
  async #call(
    { webhook }: Hook,
    a: AdmissionAttributes,
    object: KubeObject | undefined,
    warnings: string[],
  ): Promise<AdmissionResponse | ApiError | undefined> {
    if (a.dryRun) {
      if (webhook.sideEffects === undefined) return callFailure(webhook, 'Webhook SideEffects is nil');
      if (webhook.sideEffects !== 'None' && webhook.sideEffects !== 'NoneOnDryRun')
        return badRequest(`admission webhook "${webhook.name}" does not support dry run`);
    }
    const uid = randomUUID();
    const kind = object?.kind ?? a.oldObject?.kind ?? a.t.kind;
    const review = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid,
        kind: { group: a.t.group, version: a.t.version, kind },
        resource: { group: a.t.group, version: a.t.version, resource: a.t.plural },
        ...(a.subresource ? { subResource: a.subresource } : {}),
        requestKind: { group: a.t.group, version: a.t.version, kind },
        requestResource: { group: a.t.group, version: a.t.version, resource: a.t.plural },
        ...(a.subresource ? { requestSubResource: a.subresource } : {}),
        name: a.name,
        ...(a.namespace ? { namespace: a.namespace } : {}),
        operation: a.operation,
        userInfo: {
          username: a.user.name,
          ...(a.user.uid ? { uid: a.user.uid } : {}),
          groups: a.user.groups,
        },
        object: object ?? null,
        oldObject: a.oldObject ?? null,
        dryRun: a.dryRun,
        ...(a.options ? { options: a.options } : {}),
      },
    };
    let response: AdmissionResponse;
    try {
      response = await post(webhook, review);
      if (response.uid !== uid) throw new CallError(`expected response.uid="${uid}", got "${response.uid}"`);
    } catch (err) {
      return callFailure(webhook, (err as Error).message);
    }
    for (const w of response.warnings ?? []) if (!warnings.includes(w)) warnings.push(w);
    return response;
  }
}

interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code?: number; message?: string; reason?: string };
  patch?: string;
  patchType?: string;
  warnings?: string[];
}

/**
 * A failed call per the webhook's failure policy: `Fail` (the default) → 500 `failed calling
 * webhook "<name>": <why>` (apierrors.NewInternalError of ErrCallingWebhook); `Ignore` → `undefined`.
 */
function callFailure(webhook: Webhook, why: string): ApiError | undefined {
  if (webhook.failurePolicy === 'Ignore') return undefined;
  return internalError(`failed calling webhook "${webhook.name}": ${why}`);
}

/**
 * A denial in kube-apiserver's words (webhook/errors.ToStatusErr): the webhook's own status, its
 * code raised to at least 400, its message prefixed with `admission webhook "<name>" denied the
 * request`, its reason and details as the webhook gave them (none when it gave none), with no
 * `<resource> "<name>" is forbidden` prefix: the validating and mutating dispatchers return that
 * StatusError as it is (checked against kube-apiserver v1.36).
 */
function deniedError(webhookName: string, result: AdmissionResponse['status'] | undefined): ApiError {
  const code = !result?.code || result.code < 400 ? 400 : result.code;
  const deniedBy = `admission webhook "${webhookName}" denied the request`;
  const message = result?.message
    ? `${deniedBy}: ${result.message}`
    : result?.reason
      ? `${deniedBy}: ${result.reason}`
      : `${deniedBy} without explanation`;
  return new ApiError({ code, message, ...(result?.reason ? { reason: result.reason } : {}) });
}

/**
 * POSTs the review to the webhook's URL over HTTPS within its timeout.
 * @throws {Error} when it cannot be called or its answer is not a review (the caller's ErrCallingWebhook)
 */
async function post(webhook: Webhook, review: unknown): Promise<AdmissionResponse> {
  const url = webhook.clientConfig?.url;
  if (!url) {
    throw new CallError(
      webhook.clientConfig?.service
        ? 'clientConfig.service is not served by the local API server (use clientConfig.url)'
        : 'no clientConfig.url',
    );
  }
  const target = new URL(url);
  if (target.protocol !== 'https:')
    throw new CallError(`the webhook URL must be https, not ${target.protocol}`);
  const timeoutMs = (webhook.timeoutSeconds ?? DEFAULT_WEBHOOK_TIMEOUT_SECONDS) * 1000;
  const ca = webhook.clientConfig?.caBundle
    ? Buffer.from(webhook.clientConfig.caBundle, 'base64')
    : undefined;
  const body = Buffer.from(JSON.stringify(review));
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = httpsRequest(
      target,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': body.length,
        },
        ...(ca ? { ca } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', (err) =>
      reject(err.name === 'AbortError' ? new CallError(`context deadline exceeded (${timeoutMs} ms)`) : err),
    );
    req.end(body);
  });
  if (status < 200 || status > 299)
    throw new CallError(`the server answered ${status}: ${text.slice(0, 200)}`);
  let parsed: { response?: AdmissionResponse };
  try {
    parsed = JSON.parse(text) as { response?: AdmissionResponse };
  } catch {
    throw new CallError('the answer is not JSON');
  }
  if (!parsed.response || typeof parsed.response.allowed !== 'boolean')
    throw new CallError('the answer has no response.allowed');
  return parsed.response;
}
