/**
 * ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1) evaluated on create and update, as
 * kube-apiserver's ValidatingAdmissionPolicy admission plugin does
 * (k8s.io/apiserver/pkg/admission/plugin/policy/validating: `dispatcher.go`, `validator.go`,
 * `matching`), after the object's own validation:
 *
 * - a binding applies its policy (`spec.policyName`) to a request that both the policy's
 *   `matchConstraints` and the binding's `matchResources` match: resource rules (group, version,
 *   resource or `resource/subresource`, operation, `*`), minus `excludeResourceRules`, a
 *   `namespaceSelector` (on the namespace's labels; a cluster-scoped object other than a Namespace
 *   always matches) and an `objectSelector`; then every `matchConditions` expression must be true;
 * - CEL sees `object`, `oldObject` (null on CREATE), `request` (operation, name, namespace, kind,
 *   resource, subResource, userInfo, dryRun), `namespaceObject`, `variables` and `params` (null:
 *   no `paramKind` here);
 * - a false validation's message is its `message`, else its `messageExpression`'s string, else
 *   `failed expression: <expression>`; an expression that errs is `expression '<e>' resulted in error:
 *   <error>` under `failurePolicy: Fail`, ignored under `Ignore`;
 * - per the binding's `validationActions`: `Deny` refuses with the first denial, `<resource>
 *   "<name>" is forbidden: ValidatingAdmissionPolicy '<policy>' with binding '<binding>' denied
 *   request: <message>` (admission.NewForbidden, its reason replaced by the validation's `reason`,
 *   default `Invalid`, and the code by that reason's: 422, 403, 401 or 413; one cause with the
 *   message); `Warn` adds a warning `Validation failed for ValidatingAdmissionPolicy '<policy>'
 *   with binding '<binding>': <message>`; `Audit` has no audit log here and does nothing.
 *
 * Not covered: `paramKind`/`paramRef`, `auditAnnotations`, the `authorizer` variable, the type
 * check written into the policy's status, and DELETE and CONNECT requests.
 */
import { celEnv, isCelError, parse, plan } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import type { KubeObject } from './resources.ts';
import { ApiError, type GroupResource, qualified } from './status.ts';

/** The request a policy judges. */
export interface PolicyRequest {
  operation: 'CREATE' | 'UPDATE';
  group: string;
  version: string;
  kind: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name: string;
  object: KubeObject;
  oldObject?: KubeObject;
  /** The object's Namespace (for `namespaceSelector` and `namespaceObject`); absent when cluster-scoped. */
  namespaceObject?: KubeObject;
  user?: { username: string; uid?: string; groups: string[] };
  dryRun: boolean;
}

/** What the policies decided: the refusal to throw, and warnings for `Warning` headers. */
export interface PolicyOutcome {
  denied?: ApiError;
  warnings: string[];
}

// biome-ignore lint/suspicious/noExplicitAny: admissionregistration objects as stored JSON
type Json = Record<string, any>;

interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** metav1.LabelSelector semantics: every label and expression holds; an empty selector matches all. */
function selects(selector: Selector | undefined, labels: Record<string, string>): boolean {
  if (!selector) return true;
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const value = labels[e.key] ?? '';
    if (e.operator === 'In' && !(has && (e.values ?? []).includes(value))) return false;
    if (e.operator === 'NotIn' && has && (e.values ?? []).includes(value)) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

function ruleMatches(rule: Json, req: PolicyRequest): boolean {
  const any = (list: unknown, v: string) => Array.isArray(list) && (list.includes('*') || list.includes(v));
  const resource = req.subresource ? `${req.resource}/${req.subresource}` : req.resource;
  const resources: string[] = rule.resources ?? [];
  const resourceOk = resources.some(
    (r) =>
      r === resource ||
      r === '*/*' ||
      (r === '*' && !req.subresource) ||
      (req.subresource !== undefined && r === `*/${req.subresource}`) ||
      (req.subresource !== undefined && r === `${req.resource}/*`),
  );
  return (
    any(rule.apiGroups, req.group) &&
    any(rule.apiVersions, req.version) &&
    resourceOk &&
    any(rule.operations, req.operation)
  );
}

/** Whether `match` (a policy's matchConstraints or a binding's matchResources) takes the request. */
function matches(match: Json | undefined, req: PolicyRequest, requireRules: boolean): boolean {
  if (!match) return !requireRules;
  const rules: Json[] = match.resourceRules ?? [];
  if ((requireRules || rules.length > 0) && !rules.some((r) => ruleMatches(r, req))) return false;
  if ((match.excludeResourceRules ?? []).some((r: Json) => ruleMatches(r, req))) return false;
  const namespaceLabels =
    req.namespaceObject?.metadata.labels ??
    (req.kind === 'Namespace' && req.group === '' ? req.object.metadata.labels : undefined);
  if (match.namespaceSelector && (req.namespace || req.kind === 'Namespace'))
    if (!selects(match.namespaceSelector, namespaceLabels ?? {})) return false;
  if (match.objectSelector && !selects(match.objectSelector, req.object.metadata.labels ?? {})) return false;
  return true;
}

/** JSON as CEL sees it with no schema: integral numbers are `int`. */
function celValue(v: unknown): unknown {
  if (typeof v === 'number') return Number.isInteger(v) ? BigInt(v) : v;
  if (Array.isArray(v)) return v.map(celValue);
  if (v && typeof v === 'object')
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, celValue(x)]));
  return v;
}

const env = celEnv({ funcs: strings });
const programs = new Map<string, ReturnType<typeof plan> | Error>();

/** Evaluates `expression`: its value, or the Error it raised (a parse error included). */
function evaluate(expression: string, bindings: Record<string, unknown>): unknown {
  let p = programs.get(expression);
  if (!p) {
    try {
      p = plan(env, parse(expression));
    } catch (err) {
      p = err as Error;
    }
    programs.set(expression, p);
  }
  if (p instanceof Error) return p;
  try {
    const v = p(bindings as Record<string, never>);
    return isCelError(v) ? new Error(v.message.replace(/^field not found: /, 'no such key: ')) : v;
  } catch (err) {
    return err as Error;
  }
}

const CODES: Record<string, number> = {
  Unauthorized: 401,
  Forbidden: 403,
  RequestEntityTooLarge: 413,
  Invalid: 422,
};

/**
 * The outcome of every bound policy on one request.
 * @param policies the stored ValidatingAdmissionPolicies; `bindings` their bindings
 */
export function admitByPolicies(
  policies: readonly KubeObject[],
  bindings: readonly KubeObject[],
  req: PolicyRequest,
  gr: GroupResource,
): PolicyOutcome {
  const warnings: string[] = [];
  const byName = new Map(policies.map((p) => [p.metadata.name ?? '', p as Json]));
  const request = {
    operation: req.operation,
    name: req.name,
    namespace: req.namespace ?? '',
    kind: { group: req.group, version: req.version, kind: req.kind },
    resource: { group: req.group, version: req.version, resource: req.resource },
    subResource: req.subresource ?? '',
    userInfo: {
      username: req.user?.username ?? '',
      uid: req.user?.uid ?? '',
      groups: req.user?.groups ?? [],
    },
    dryRun: req.dryRun,
  };
  const base = {
    object: celValue(req.object),
    oldObject: req.oldObject ? celValue(req.oldObject) : null,
    request: celValue(request),
    namespaceObject: req.namespaceObject ? celValue(req.namespaceObject) : null,
    params: null,
  };
  const sorted = [...bindings].sort((a, b) => (a.metadata.name ?? '').localeCompare(b.metadata.name ?? ''));
  for (const binding of sorted as Json[]) {
    const policy = byName.get(binding.spec?.policyName ?? '');
    if (!policy) continue;
    const spec: Json = policy.spec ?? {};
    if (!matches(spec.matchConstraints, req, true) || !matches(binding.spec?.matchResources, req, false))
      continue;
    const fail = spec.failurePolicy !== 'Ignore';
    const decisions: { message: string; reason?: string }[] = [];
    // matchConditions: all true to apply; an error fails the request under failurePolicy Fail.
    let applies = true;
    for (const c of (spec.matchConditions ?? []) as Json[]) {
      const v = evaluate(c.expression, { ...base, variables: {} });
      if (v instanceof Error) {
        if (fail) decisions.push({ message: `expression '${c.expression}' resulted in error: ${v.message}` });
        else applies = false;
        break;
      }
      if (v !== true) {
        applies = false;
        break;
      }
    }
    if (!applies) continue;
    if (decisions.length === 0) {
      const variables: Record<string, unknown> = {};
      for (const v of (spec.variables ?? []) as Json[]) {
        const value = evaluate(v.expression, { ...base, variables });
        if (!(value instanceof Error)) variables[v.name] = value;
      }
      const bound = { ...base, variables };
      for (const v of (spec.validations ?? []) as Json[]) {
        const result = evaluate(v.expression, bound);
        if (result === true) continue;
        if (result instanceof Error) {
          if (fail)
            decisions.push({ message: `expression '${v.expression}' resulted in error: ${result.message}` });
          continue;
        }
        let message = typeof v.message === 'string' && v.message ? v.message : '';
        if (v.messageExpression) {
          const m = evaluate(v.messageExpression, bound);
          if (typeof m === 'string' && m.trim() && !m.includes('\n')) message = m.trim();
        }
        decisions.push({
          message: message || `failed expression: ${String(v.expression).trim()}`,
          reason: v.reason,
        });
      }
    }
    const actions: string[] = binding.spec?.validationActions ?? [];
    for (const d of decisions) {
      const policyName = policy.metadata?.name ?? '';
      const bindingName = binding.metadata?.name ?? '';
      if (actions.includes('Warn'))
        warnings.push(
          `Validation failed for ValidatingAdmissionPolicy '${policyName}' with binding '${bindingName}': ${d.message}`,
        );
      if (actions.includes('Deny')) {
        const message = `ValidatingAdmissionPolicy '${policyName}' with binding '${bindingName}' denied request: ${d.message}`;
        const reason = d.reason || 'Invalid';
        const subject = req.name ? `${qualified(gr)} "${req.name}"` : qualified(gr);
        return {
          warnings,
          denied: new ApiError({
            message: `${subject} is forbidden: ${message}`,
            reason,
            code: CODES[reason] ?? 422,
            details: {
              ...(req.name ? { name: req.name } : {}),
              ...(gr.group ? { group: gr.group } : {}),
              kind: gr.resource,
              causes: [{ message }],
            },
          }),
        };
      }
    }
  }
  return { warnings };
}
