/**
 * The soak's seeded randomness (pure-rand's xoroshiro128+): the same `--seed` makes the same
 * sequence of choices (the timing of a shared machine still differs run to run).
 */
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { xoroshiro128plus } from 'pure-rand/generator/xoroshiro128plus';

export interface Random {
  /** An integer in [min, max], both included. */
  int(min: number, max: number): number;
  /** True with probability `p` (0–1). */
  chance(p: number): boolean;
  /** One element of a non-empty array. @throws {Error} on an empty one */
  pick<T>(items: readonly T[]): T;
  /** A key of `weights` drawn in proportion to its weight (weights ≥ 0, not all 0). */
  weighted<K extends string>(weights: Record<K, number>): K;
}

/** A generator seeded with `seed` (an integer; only its low 32 bits count). */
export function seededRandom(seed: number): Random {
  const rng = xoroshiro128plus(seed | 0);
  const int = (min: number, max: number) => uniformInt(rng, min, max);
  return {
    int,
    chance: (p) => int(0, 999_999) < p * 1_000_000,
    pick<T>(items: readonly T[]): T {
      if (items.length === 0) throw new Error('pick from an empty array');
      return items[int(0, items.length - 1)] as T;
    },
    weighted<K extends string>(weights: Record<K, number>): K {
      const entries = Object.entries(weights) as [K, number][];
      const total = entries.reduce((s, [, w]) => s + w, 0);
      let r = (int(0, 999_999) / 1_000_000) * total;
      for (const [k, w] of entries) {
        if (r < w) return k;
        r -= w;
      }
      return (entries.at(-1) as [K, number])[0];
    },
  };
}
