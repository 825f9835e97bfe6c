// functions/kit/policy.ts: definePolicy's ValidatingAdmissionPolicy and binding manifests
// (admissionregistration.k8s.io/v1), and what it refuses where the policy is written.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { definePolicy } from '../../functions/kit/policy.ts';
import { resources } from '../../functions/kit/resources.ts';

describe('definePolicy', () => {
  it('writes the policy (match constraints, conditions, variables, validations) and a binding of the same name', () => {
    const p = definePolicy({
      name: 'limits.example.com',
      match: {
        resources: [resources.deployments, resources.statefulsets, resources.pods],
        namespaceSelector: { matchLabels: { team: 'blue' } },
      },
      matchConditions: [{ name: 'not-system', expression: "request.userInfo.username != 'system:admin'" }],
      variables: [{ name: 'containers', expression: 'object.spec.template.spec.containers' }],
      validations: [
        { expression: 'variables.containers.size() < 10', message: 'too many', reason: 'Forbidden' },
      ],
      validationActions: ['Warn', 'Audit'],
    });
    assert.equal(p.name, 'limits.example.com');
    assert.deepEqual(p.policy, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'limits.example.com', labels: { 'app.kubernetes.io/part-of': 'levelset' } },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: ['apps'],
              apiVersions: ['v1'],
              resources: ['deployments', 'statefulsets'],
              operations: ['CREATE', 'UPDATE'],
            },
            { apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE', 'UPDATE'] },
          ],
          namespaceSelector: { matchLabels: { team: 'blue' } },
        },
        matchConditions: [{ name: 'not-system', expression: "request.userInfo.username != 'system:admin'" }],
        variables: [{ name: 'containers', expression: 'object.spec.template.spec.containers' }],
        validations: [
          { expression: 'variables.containers.size() < 10', message: 'too many', reason: 'Forbidden' },
        ],
      },
    });
    assert.deepEqual(p.binding, {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: 'limits.example.com', labels: { 'app.kubernetes.io/part-of': 'levelset' } },
      spec: { policyName: 'limits.example.com', validationActions: ['Warn', 'Audit'] },
    });
  });

  it('defaults to Deny; refuses an expression that does not parse, no validations, Deny with Warn', () => {
    const ok = definePolicy({
      name: 'p',
      match: { resources: [resources.pods] },
      validations: [{ expression: 'true' }],
    });
    assert.deepEqual((ok.binding.spec as { validationActions: string[] }).validationActions, ['Deny']);
    assert.throws(
      () =>
        definePolicy({
          name: 'p',
          match: { resources: [resources.pods] },
          validations: [{ expression: 'object.' }],
        }),
      /definePolicy p: object\.: /,
    );
    assert.throws(
      () => definePolicy({ name: 'p', match: { resources: [resources.pods] }, validations: [] }),
      /at least one/,
    );
    assert.throws(
      () =>
        definePolicy({
          name: 'p',
          match: { resources: [resources.pods] },
          validations: [{ expression: 'true' }],
          validationActions: ['Deny', 'Warn'],
        }),
      /redundant/,
    );
  });
});
