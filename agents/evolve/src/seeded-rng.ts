import { createHash } from 'node:crypto';

/**
 * A small deterministic random number generator (xoshiro128**), seeded from a key. Every random
 * choice of the search draws from one of these, keyed by what the choice is about (task seed,
 * generation, slot, purpose), so a choice is reproducible on its own: replaying a journal or
 * resuming after a crash makes the same choices without storing generator state.
 */
export class SeededRng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  private constructor(words: readonly [number, number, number, number]) {
    [this.s0, this.s1, this.s2, this.s3] = words;
    // The all-zero state is the one fixed point of xoshiro; a sha256 never gives it in practice.
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  /** A generator seeded from the sha256 of the parts joined with `:`. */
  static fromKey(...parts: ReadonlyArray<string | number>): SeededRng {
    const digest = createHash('sha256').update(parts.map(String).join(':')).digest();
    return new SeededRng([
      digest.readUInt32LE(0),
      digest.readUInt32LE(4),
      digest.readUInt32LE(8),
      digest.readUInt32LE(12),
    ]);
  }

  /** The next 32-bit unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9) >>> 0;
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** A float in [0, 1) with 53 random bits. */
  next(): number {
    const hi = this.nextUint32() >>> 5;
    const lo = this.nextUint32() >>> 6;
    return (hi * 67108864 + lo) / 9007199254740992;
  }

  /** A float in [min, max). */
  uniform(min: number, max: number): number {
    return min + (max - min) * this.next();
  }

  /** An integer in [min, max] (both inclusive). */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** A standard normal deviate (Box–Muller). */
  normal(): number {
    let u = 0;
    while (u === 0) u = this.next();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** An index drawn with probability proportional to `weights` (non-negative, not all zero). */
  weightedIndex(weights: readonly number[]): number {
    const total = weights.reduce((a, b) => a + b, 0);
    if (!(total > 0)) throw new RangeError('weightedIndex: weights must have a positive sum');
    let x = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      x -= weights[i] ?? 0;
      if (x < 0) return i;
    }
    // Rounding can leave x at a hair above zero: the last positive weight takes it.
    for (let i = weights.length - 1; i >= 0; i--) if ((weights[i] ?? 0) > 0) return i;
    return weights.length - 1;
  }

  /** A uniformly chosen element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick: empty array');
    return items[this.int(0, items.length - 1)] as T;
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}
