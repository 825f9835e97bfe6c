/**
 * Kubernetes resource quantities (`2000m`, `1.5Gi`, `1e3`) as the API server stores them:
 * apimachinery's `resource.Quantity` parses a quantity and writes it back in canonical form
 * (`Quantity.String()`, quantity.go `CanonicalizeBytes`), so a child applied with `cpu: 2000m`
 * is read back as `cpu: "2"`. The kit compares quantities by value ({@link quantitiesEqual}: a
 * converged child stays a no-op) and a controller may write the stored form itself
 * ({@link canonicalQuantity}).
 */

const BINARY = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'] as const;
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const QUANTITY = /^([+-]?)(\d*)(?:\.(\d*))?(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([numkMGTPE])|[eE]([+-]?\d+))?$/;

/** A quantity's exact value, `mantissa × 10^exponent`, and the format its suffix says. */
interface Parsed {
  mantissa: bigint;
  exponent: number;
  format: 'BinarySI' | 'DecimalSI' | 'DecimalExponent';
}

function parse(quantity: string): Parsed | undefined {
  const m = QUANTITY.exec(quantity);
  if (!m) return undefined;
  const [, sign = '', whole = '', fraction = '', binary, decimal, power] = m;
  if (whole === '' && fraction === '') return undefined;
  let mantissa = BigInt(`${sign}${whole}${fraction}` || '0');
  let exponent = -fraction.length;
  if (binary) mantissa *= 1024n ** BigInt(BINARY.indexOf(binary as (typeof BINARY)[number]));
  else if (power !== undefined) exponent += Number(power);
  else exponent += DECIMAL[decimal ?? ''] ?? 0;
  const format = binary ? 'BinarySI' : power !== undefined ? 'DecimalExponent' : 'DecimalSI';
  return { mantissa, exponent, format };
}

/** `|value| < 1024`, for `value = mantissa × 10^exponent`. */
function below1024({ mantissa, exponent }: Parsed): boolean {
  const abs = mantissa < 0n ? -mantissa : mantissa;
  return exponent >= 0 ? abs * 10n ** BigInt(exponent) < 1024n : abs < 1024n * 10n ** BigInt(-exponent);
}

/**
 * `quantity` in the canonical form the API server stores (apimachinery `Quantity.String()`): a
 * binary quantity of at least 1024 that is a whole number of units keeps the largest binary suffix
 * that divides it (`1024Mi` → `1Gi`, `0.5Gi` → `512Mi`), any other quantity is decimal with the
 * largest SI suffix (or exponent, for `1e3`) that keeps its mantissa whole (`2000m` → `2`,
 * `0.5` → `500m`, `1000` → `1k`), its precision rounded up to nano units.
 * @returns the canonical form, or `quantity` unchanged when it is not a quantity
 */
export function canonicalQuantity(quantity: string): string {
  const parsed = parse(quantity);
  if (!parsed) return quantity;
  let { mantissa, exponent } = parsed;
  let { format } = parsed;
  if (format === 'BinarySI' && below1024(parsed)) format = 'DecimalSI';
  if (format === 'BinarySI') {
    const scale = 10n ** BigInt(Math.abs(exponent));
    if (exponent < 0 && mantissa % scale !== 0n) format = 'DecimalSI';
    else {
      let value = exponent < 0 ? mantissa / scale : mantissa * scale;
      let unit = 0;
      while (unit < BINARY.length - 1 && value % 1024n === 0n && value !== 0n) {
        value /= 1024n;
        unit++;
      }
      return `${value}${BINARY[unit]}`;
    }
  }
  if (exponent < -9) {
    // Rounded up to nano units, as `AsScale(-9)`: away from zero.
    const scale = 10n ** BigInt(-9 - exponent);
    const rounded = mantissa / scale;
    mantissa = rounded * scale === mantissa ? rounded : rounded + (mantissa < 0n ? -1n : 1n);
    exponent = -9;
  }
  if (mantissa === 0n) return '0';
  while (mantissa % 10n === 0n) {
    mantissa /= 10n;
    exponent++;
  }
  while (exponent % 3 !== 0 || (format === 'DecimalSI' && exponent > 18)) {
    mantissa *= 10n;
    exponent--;
  }
  if (format === 'DecimalExponent') return exponent === 0 ? `${mantissa}` : `${mantissa}e${exponent}`;
  const suffix = Object.entries(DECIMAL).find(([, e]) => e === exponent)?.[0] ?? '';
  return `${mantissa}${suffix}`;
}

/** Whether `a` and `b` are quantities of the same value (`2000m` and `2`); `false` when either is not a quantity. */
export function quantitiesEqual(a: string, b: string): boolean {
  return parse(a) !== undefined && parse(b) !== undefined && canonicalQuantity(a) === canonicalQuantity(b);
}
