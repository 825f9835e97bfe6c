/**
 * The registry: the one list of this project's controllers. The relay reads it to know what to
 * watch, the functions to know what to run, `levelset build` to know what to grant (package.json's
 * "levelset.registry" names this file). `levelset new controller` adds a line. `policies`: the
 * project's admission policies, which the API server evaluates (`levelset build` writes them).
 */
import type { AdmissionPolicy, Controller } from 'levelset/kit';
import { teamLimitsPolicy } from './team-limits/policy.ts';
import { tenantController } from './tenant/index.ts';

export const controllers: readonly Controller[] = [
  tenantController, // Tenant (platform.levelset.dev/v1alpha1)
];

export const policies: readonly AdmissionPolicy[] = [
  teamLimitsPolicy, // Deployments in namespaces labelled `team` set resources.limits
];
