/**
 * `definePolicy`: a ValidatingAdmissionPolicy and its binding (admissionregistration.k8s.io/v1, GA
 * since Kubernetes 1.30) declared in TypeScript, for rules on kinds the project does not own ("a
 * Deployment in a namespace labelled `team` sets resources.limits"). The API server evaluates the
 * CEL itself: no webhook, nothing to deploy or to be down. A project's registry exports its
 * policies beside its controllers (`export const policies = [...]`); `levelset build` writes them
 * into `deploy/admission-policies.yaml` and `deploy/registry.gen.json`, and the Terraform module
 * applies them.
 *
 * The manifests follow the API's fields: `matchConstraints` (resource rules, a namespace selector,
 * an object selector), `matchConditions`, `variables`, `validations` (`expression`, `message` or
 * `messageExpression`, `reason`), `failurePolicy`, and the binding's `validationActions`
 * (`Deny`, `Warn`, `Audit`; `Deny` and `Warn` together are refused, as the API server refuses them).
 */
import { parse } from '@bufbuild/cel';
import type { AdmissionPolicy } from '../../core/contract/admission.ts';
import type { ResourceType } from '../../core/contract/controller.ts';

/** A label selector (metav1.LabelSelector). */
export interface PolicyLabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: {
    key: string;
    operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    values?: string[];
  }[];
}

/** One CEL validation of a policy: true admits the request. */
export interface PolicyValidation {
  /** CEL over `object`, `oldObject`, `request`, `namespaceObject`, `variables` (and `params`, null here). */
  expression: string;
  /** The refusal's message; default `failed expression: <expression>`. */
  message?: string;
  /** A CEL string expression giving the message, used before `message` when it evaluates. */
  messageExpression?: string;
  /** The refusal's `Status` reason and code; default `Invalid` (422). */
  reason?: 'Invalid' | 'Forbidden' | 'Unauthorized' | 'RequestEntityTooLarge';
}

/** What {@link definePolicy} takes. */
export interface PolicyDeclaration {
  /** The policy's and its binding's name (a DNS subdomain, cluster-wide). */
  name: string;
  /** Which requests the policy sees. */
  match: {
    /** The kinds (e.g. `resources.deployments`), each by group, version and plural. */
    resources: readonly ResourceType[];
    /** Default `['CREATE', 'UPDATE']`. */
    operations?: readonly ('CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT' | '*')[];
    /** Only objects in namespaces whose labels match (a cluster-scoped object always matches). */
    namespaceSelector?: PolicyLabelSelector;
    /** Only objects whose labels match. */
    objectSelector?: PolicyLabelSelector;
  };
  /** CEL preconditions, all true for the policy to apply (at most 64). */
  matchConditions?: readonly { name: string; expression: string }[];
  /** Named CEL values the validations read as `variables.<name>`. */
  variables?: readonly { name: string; expression: string }[];
  validations: readonly PolicyValidation[];
  /** What a failed validation does: `Deny` (refuse), `Warn` (a `Warning` header), `Audit`. Default `['Deny']`. */
  validationActions?: readonly ('Deny' | 'Warn' | 'Audit')[];
  /** What an expression that cannot be evaluated does: `Fail` (default, refuse) or `Ignore`. */
  failurePolicy?: 'Fail' | 'Ignore';
}

const LABELS = { 'app.kubernetes.io/part-of': 'levelset' };

/**
 * A ValidatingAdmissionPolicy and its binding, named `name`.
 * @example definePolicy({ name: 'team-limits.levelset.dev', match: { resources: [resources.deployments], namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'Exists' }] } }, validations: [{ expression: 'object.spec.template.spec.containers.all(c, has(c.resources.limits))', message: 'every container sets resources.limits' }] })
 * @throws {Error} `definePolicy <name>: …` for an expression that does not parse, no validations,
 *   or `Deny` with `Warn` (redundant: the API server refuses the binding).
 */
export function definePolicy(declaration: PolicyDeclaration): AdmissionPolicy {
  const { name, match } = declaration;
  const fail = (why: string): never => {
    throw new Error(`definePolicy ${name}: ${why}`);
  };
  if (declaration.validations.length === 0) fail('a policy needs at least one validation');
  const actions = declaration.validationActions ?? ['Deny'];
  if (actions.includes('Deny') && actions.includes('Warn'))
    fail('validationActions Deny and Warn together are redundant (the API server refuses them)');
  const expressions = [
    ...(declaration.matchConditions ?? []).map((c) => c.expression),
    ...(declaration.variables ?? []).map((v) => v.expression),
    ...declaration.validations.flatMap((v) => [
      v.expression,
      ...(v.messageExpression ? [v.messageExpression] : []),
    ]),
  ];
  for (const expression of expressions) {
    try {
      parse(expression);
    } catch (err) {
      fail(`${expression}: ${(err as Error).message}`);
    }
  }
  // One resource rule per group/version, as kubectl prints them.
  const rules = new Map<string, { apiGroups: string[]; apiVersions: string[]; resources: string[] }>();
  for (const r of match.resources) {
    const key = `${r.group}/${r.version}`;
    const rule = rules.get(key) ?? { apiGroups: [r.group], apiVersions: [r.version], resources: [] };
    if (!rule.resources.includes(r.plural)) rule.resources.push(r.plural);
    rules.set(key, rule);
  }
  const operations = [...(match.operations ?? ['CREATE', 'UPDATE'])];
  const policy = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name, labels: { ...LABELS } },
    spec: {
      failurePolicy: declaration.failurePolicy ?? 'Fail',
      matchConstraints: {
        resourceRules: [...rules.values()].map((r) => ({ ...r, operations })),
        ...(match.namespaceSelector ? { namespaceSelector: match.namespaceSelector } : {}),
        ...(match.objectSelector ? { objectSelector: match.objectSelector } : {}),
      },
      ...(declaration.matchConditions?.length
        ? { matchConditions: declaration.matchConditions.map((c) => ({ ...c })) }
        : {}),
      ...(declaration.variables?.length ? { variables: declaration.variables.map((v) => ({ ...v })) } : {}),
      validations: declaration.validations.map((v) => ({ ...v })),
    },
  };
  const binding = {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name, labels: { ...LABELS } },
    spec: { policyName: name, validationActions: [...actions] },
  };
  return { name, policy, binding };
}
