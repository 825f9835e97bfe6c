/**
 * Status conditions, as the Kubernetes API conventions define them ("Typical status properties":
 * `metav1.Condition`) and as apimachinery's `meta.SetStatusCondition` maintains them:
 * one condition per `type`, `lastTransitionTime` moves only when `status` changes, and every
 * condition says which `metadata.generation` it was computed from (`observedGeneration`).
 */
import { isDeepStrictEqual } from 'node:util';
import * as z from 'zod';

/** `True`, `False` or `Unknown` (metav1.ConditionStatus). */
export const conditionStatusSchema = z.enum(['True', 'False', 'Unknown']);

/**
 * One condition (metav1.Condition). `lastTransitionTime` is RFC 3339 with second precision
 * (metav1.Time's wire format); `reason` is UpperCamelCase; `observedGeneration` is the
 * `metadata.generation` the condition was computed from.
 */
export const conditionSchema = z.object({
  type: z.string().min(1).max(316),
  status: conditionStatusSchema,
  observedGeneration: z.number().int().min(0).meta({ format: 'int64' }).optional(),
  lastTransitionTime: z.string().meta({ format: 'date-time' }),
  reason: z.string().max(1024),
  message: z.string().max(32768),
});
export type Condition = z.infer<typeof conditionSchema>;

/** A condition to set: everything but `lastTransitionTime`, which {@link setCondition} maintains. */
export type ConditionInput = Omit<Condition, 'lastTransitionTime'>;

/**
 * Reads `status.conditions` leniently: entries that are not valid conditions are dropped (a
 * controller must not fail because someone wrote garbage into its status).
 * @param value anything (typically `object.status?.conditions`); not an array → `[]`.
 */
export function parseConditions(value: unknown): Condition[] {
  if (!Array.isArray(value)) return [];
  const out: Condition[] = [];
  for (const item of value) {
    const parsed = conditionSchema.safeParse(item);
    if (parsed.success) out.push(parsed.data);
  }
  return out;
}

/** metav1.Time's wire format: RFC 3339, UTC, second precision (`2026-11-21T10:00:00Z`). */
export function metaTime(date: Date): string {
  return `${date.toISOString().slice(0, 19)}Z`;
}

/** The condition of `type`, or `undefined` (apimachinery `meta.FindStatusCondition`). */
export function findCondition(
  conditions: readonly Condition[] | undefined,
  type: string,
): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * Returns a copy of `conditions` with `next` set, as apimachinery's `meta.SetStatusCondition`:
 * a new type is appended with `lastTransitionTime = now`; an existing one is updated in place and
 * keeps its `lastTransitionTime` unless its `status` changes. The input is not modified.
 * @param now the transition time for a new or changed status (default: the current time)
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: ConditionInput,
  now = new Date(),
): Condition[] {
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === next.type);
  const existing = index >= 0 ? list[index] : undefined;
  const lastTransitionTime =
    existing && existing.status === next.status ? existing.lastTransitionTime : metaTime(now);
  const condition: Condition = {
    type: next.type,
    status: next.status,
    ...(next.observedGeneration !== undefined ? { observedGeneration: next.observedGeneration } : {}),
    lastTransitionTime,
    reason: next.reason,
    message: next.message,
  };
  if (index >= 0) list[index] = condition;
  else list.push(condition);
  return list;
}

/** True when the condition of `type` exists with status `True` (apimachinery `meta.IsStatusConditionTrue`). */
export function isConditionTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/**
 * True when a merge patch of `desired` onto `current` would change it: the status write is skipped
 * otherwise, so a steady-state reconcile costs no write. Only the members of `desired` are compared
 * (a merge patch leaves the others alone), structurally, key order ignored; `undefined` members are
 * treated as absent, as in JSON; a `null` member (a merge patch's "remove", RFC 7386) changes only
 * a status that has it.
 */
export function statusChanged(current: unknown, desired: Record<string, unknown>): boolean {
  const have = (normalise(current) ?? {}) as Record<string, unknown>;
  const want = normalise(desired) as Record<string, unknown>;
  return Object.keys(want).some((k) =>
    want[k] === null ? have[k] !== undefined && have[k] !== null : !isDeepStrictEqual(have[k], want[k]),
  );
}

function normalise(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}
