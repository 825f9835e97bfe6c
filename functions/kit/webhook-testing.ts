/**
 * Calling an admission webhook in a unit test, with no server (exported by `levelset/kit/testing`):
 * the AdmissionReview an API server would send is built from an object, answered exactly as the
 * `admission` function answers it (core/admission.ts: zod, the deadline, the failure policy), and
 * the answer decoded: the patch as JSON Patch operations and the object with it applied.
 *
 *   const r = await admitForTest(fooDefaults, { operation: 'CREATE', object: foo });
 *   assert.equal(r.allowed, true);
 *   assert.equal(r.object?.spec.replicas, 1);
 */
import { randomUUID } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import fjp, { type Operation } from 'fast-json-patch';
import {
  type AdmissionOutcome,
  type AdmissionReviewResponse,
  answerAdmission,
  silentLogger,
} from '../../core/admission.ts';
import type {
  AdmissionOperation,
  AdmissionStatus,
  AdmissionUserInfo,
  AdmissionWebhook,
} from '../../core/contract/admission.ts';

/** What {@link admitForTest} sends. */
export interface AdmitForTestInput<T extends KubernetesObject = KubernetesObject> {
  operation: AdmissionOperation;
  /** The object to be stored (CREATE, UPDATE); its `metadata.namespace`/`name` are the request's unless given. */
  object?: T;
  /** The stored object (UPDATE, DELETE). */
  oldObject?: T;
  namespace?: string;
  name?: string;
  /** Default `{ username: 'test-user', groups: ['system:authenticated'] }`. */
  userInfo?: AdmissionUserInfo;
  dryRun?: boolean;
  /** The resource (plural) as the rule names it; default the webhook's first rule's. */
  resource?: string;
}

/** The decoded answer. */
export interface AdmitForTestResult<T extends KubernetesObject = KubernetesObject> {
  allowed: boolean;
  /** How the review ended: `allowed`, `denied`, `patched`, `failed` (the handler threw or timed out). */
  outcome: AdmissionOutcome;
  status?: AdmissionStatus;
  warnings: string[];
  /** The JSON Patch operations of a mutating webhook's answer (`[]` when none). */
  patch: Operation[];
  /** `object` with the patch applied (`object` itself when there is no patch). */
  object?: T;
  /** The review as it went over the wire. */
  review: AdmissionReviewResponse;
}

/**
 * Answers one AdmissionReview built from `input` with `webhook`, as the `admission` function would.
 * @throws {Error} when the answer is not a review (it cannot be: the request built here is well-formed)
 */
export async function admitForTest<T extends KubernetesObject = KubernetesObject>(
  webhook: AdmissionWebhook,
  input: AdmitForTestInput<T>,
): Promise<AdmitForTestResult<T>> {
  const rule = webhook.rules[0];
  const subject = input.object ?? input.oldObject;
  const apiVersion =
    subject?.apiVersion ?? (rule ? [rule.apiGroups[0], rule.apiVersions[0]].filter(Boolean).join('/') : 'v1');
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : ['', apiVersion];
  const [resource, subResource] = (input.resource ?? rule?.resources[0] ?? '').split('/');
  const body = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: randomUUID(),
      kind: { group: group ?? '', version: version ?? '', kind: subject?.kind ?? '' },
      resource: { group: group ?? '', version: version ?? '', resource },
      ...(subResource ? { subResource } : {}),
      name: input.name ?? subject?.metadata?.name ?? '',
      namespace: input.namespace ?? subject?.metadata?.namespace ?? '',
      operation: input.operation,
      userInfo: input.userInfo ?? { username: 'test-user', groups: ['system:authenticated'] },
      object: input.object ?? null,
      oldObject: input.oldObject ?? null,
      dryRun: input.dryRun ?? false,
    },
  };
  const answer = await answerAdmission(webhook, body, { log: silentLogger() });
  if (answer.status !== 200) throw new Error(`the review was not answered: ${JSON.stringify(answer.body)}`);
  const review = answer.body as AdmissionReviewResponse;
  const { response } = review;
  const patch: Operation[] = response.patch
    ? (JSON.parse(Buffer.from(response.patch, 'base64').toString('utf8')) as Operation[])
    : [];
  const object =
    input.object && patch.length
      ? (fjp.applyPatch(structuredClone(input.object), patch, true, false).newDocument as T)
      : input.object;
  return {
    allowed: response.allowed,
    outcome: answer.outcome,
    ...(response.status ? { status: response.status } : {}),
    warnings: response.warnings ?? [],
    patch,
    ...(object ? { object } : {}),
    review,
  };
}
