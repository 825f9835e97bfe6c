/**
 * A ValidatingAdmissionPolicy beside the Tenant controller: a Deployment in a namespace labelled
 * `team` (a Tenant's namespaces are, when the Tenant names its team) sets `resources.limits` on
 * every container. The API server evaluates it on every create and update of a Deployment; nothing
 * runs for it. `levelset build` writes it into `deploy/admission-policies.yaml`.
 */
import { definePolicy, resources } from 'levelset/kit';

export const teamLimitsPolicy = definePolicy({
  name: 'team-limits.platform.levelset.dev',
  match: {
    resources: [resources.deployments],
    namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'Exists' }] },
  },
  validations: [
    {
      expression:
        'object.spec.template.spec.containers.all(c, has(c.resources) && has(c.resources.limits) && size(c.resources.limits) > 0)',
      messageExpression:
        "'every container of a team Deployment sets resources.limits: ' + object.spec.template.spec.containers.filter(c, !has(c.resources) || !has(c.resources.limits) || size(c.resources.limits) == 0).map(c, c.name).join(', ') + ' does not'",
    },
  ],
});
