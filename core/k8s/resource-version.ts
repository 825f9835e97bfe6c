/**
 * Ordering of resourceVersions, as apimachinery's `util/resourceversion.CompareResourceVersion`
 * (Kubernetes v1.35+, KEP-5504 "comparable resource version"): two resourceVersions of objects
 * of the same resource compare as unsigned integers when both are well formed (decimal digits, no
 * leading zero, not `0`); anything else is opaque, as the API conventions had it before, and only
 * equality says anything. client-go's `MutationCache` orders an informer's object and a write's
 * answer the same way.
 */

const WELL_FORMED = /^[1-9][0-9]*$/;

/** Whether `s` is a well-formed resourceVersion: decimal digits, no leading zero, not `0` (this file's docstring). */
export function isWellFormedResourceVersion(s: string): boolean {
  return WELL_FORMED.test(s);
}

/**
 * -1, 0 or +1 as `a` is older than, the same as or newer than `b`; `undefined` when either is not
 * a well-formed resourceVersion (then they cannot be ordered). Only meaningful for two objects of
 * one resource (one group and plural).
 */
export function compareResourceVersions(a: string, b: string): -1 | 0 | 1 | undefined {
  if (!(isWellFormedResourceVersion(a) && isWellFormedResourceVersion(b))) return undefined;
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a === b ? 0 : a < b ? -1 : 1;
}

/**
 * Whether `current` (e.g. an informer's object) is `written` (a write's answer) or a later version
 * of the same object: equal, or ordered after it by {@link compareResourceVersions}. Versions that
 * cannot be ordered count only when equal.
 */
export function isAtOrAfter(current: string | undefined, written: string): boolean {
  if (current === undefined) return false;
  if (current === written) return true;
  return compareResourceVersions(current, written) === 1;
}
