/**
 * RBAC rules as a controller declares them: Kubernetes' own `PolicyRule` shape
 * (rbac.authorization.k8s.io/v1: `apiGroups`, `resources`, `verbs`), validated with zod where they
 * enter (`defineController`, and `levelset build` for every registered controller), so
 * that a wrong shape is a clear error naming the controller and the rule, never a crash later.
 */
import * as z from 'zod';
import type { PolicyRule, Verb } from '../../core/contract/controller.ts';

/** The verbs a rule may grant (RBAC's, as `Verb` spells them). */
export const VERBS = [
  'get',
  'list',
  'watch',
  'create',
  'update',
  'patch',
  'delete',
  'deletecollection',
] as const satisfies readonly Verb[];

/**
 * A `PolicyRule` (rbac.authorization.k8s.io/v1) with the members Levelset grants: `apiGroups`
 * (`""` is core), `resources` (plurals, `plural/subresource` for a subresource), `verbs`. Unknown
 * members (e.g. `apiGroup`, `resourceNames`) are refused rather than silently not granted.
 */
export const policyRuleSchema = z.strictObject({
  apiGroups: z.array(z.string()).min(1),
  resources: z.array(z.string().min(1)).min(1),
  verbs: z.array(z.enum(VERBS)).min(1),
});

/**
 * `rules`, checked to be `PolicyRule`s.
 * @param owner who declares them (a controller's name), for the message
 * @throws {Error} `<owner>: rbac[<i>].<path>: <issue>; … (a rule is {apiGroups: string[], resources:
 *   string[], verbs: string[]}, as rbac.authorization.k8s.io/v1 PolicyRule)`
 */
export function parsePolicyRules(owner: string, rules: unknown): PolicyRule[] {
  const parsed = z.array(policyRuleSchema).safeParse(rules);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.map((i) => {
    const [index, ...path] = i.path;
    const where =
      index === undefined ? 'rbac' : `rbac[${String(index)}]${path.map((p) => `.${String(p)}`).join('')}`;
    return `${where}: ${i.message}`;
  });
  throw new Error(
    `${owner}: invalid RBAC rules: ${issues.join('; ')} (a rule is {apiGroups: string[], resources: string[], verbs: string[]}, as rbac.authorization.k8s.io/v1 PolicyRule; "" is the core group)`,
  );
}
