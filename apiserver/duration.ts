/**
 * Human-readable durations as kubectl and kube-apiserver's table printers write them ("5m10s", "3h",
 * "2d1h", "2y"): a port of apimachinery's `k8s.io/apimachinery/pkg/util/duration.HumanDuration`, which
 * `translateTimestampSince` (pkg/printers/internalversion) and the CRD table convertor's `date` columns
 * (`metatable.ConvertToHumanReadableDateType`) use for AGE.
 */

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * `duration.HumanDuration`: ~2-3 significant figures. Go's integer conversions truncate toward zero,
 * so do these. Up to 2 s in the future (clock skew) is "0s"; more is "<invalid>".
 * @param ms the duration in milliseconds (may be negative)
 */
export function humanDuration(ms: number): string {
  const seconds = Math.trunc(ms / SECOND);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 60 * 2) return `${seconds}s`;
  const minutes = Math.trunc(ms / MINUTE);
  if (minutes < 10) {
    const s = seconds % 60;
    return s === 0 ? `${minutes}m` : `${minutes}m${s}s`;
  }
  if (minutes < 60 * 3) return `${minutes}m`;
  const hours = Math.trunc(ms / HOUR);
  if (hours < 8) {
    const m = minutes % 60;
    return m === 0 ? `${hours}h` : `${hours}h${m}m`;
  }
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) {
    const h = hours % 24;
    return h === 0 ? `${Math.trunc(hours / 24)}d` : `${Math.trunc(hours / 24)}d${h}h`;
  }
  if (hours < 24 * 365 * 2) return `${Math.trunc(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const dy = Math.trunc(hours / 24) % 365;
    const y = Math.trunc(hours / 24 / 365);
    return dy === 0 ? `${y}y` : `${y}y${dy}d`;
  }
  return `${Math.trunc(hours / 24 / 365)}y`;
}

/**
 * The printers' `translateTimestampSince`: the human duration from an RFC 3339 timestamp to `now`;
 * "<unknown>" for a missing (zero) timestamp, as metav1.Time.IsZero.
 * @param now epoch ms (defaults to the current time)
 */
export function timestampSince(timestamp: unknown, now = Date.now()): string {
  if (typeof timestamp !== 'string' || timestamp === '') return '<unknown>';
  const t = Date.parse(timestamp);
  if (Number.isNaN(t)) return '<unknown>';
  return humanDuration(now - t);
}
