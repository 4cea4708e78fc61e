/**
 * Softmax over min-max-normalised values: each value is mapped to [0, 1] (all equal → all 0),
 * divided by `temperature` and exponentiated. Returns probabilities summing to 1. Lower
 * temperatures concentrate the mass on the best values; higher ones flatten it.
 */
export function softmaxOverNormalised(values: readonly number[], temperature: number): number[] {
  if (values.length === 0) return [];
  if (!(temperature > 0)) throw new RangeError('softmax: temperature must be > 0');
  const lo = Math.min(...values);
  const hi = Math.max(...values);
  const span = hi - lo;
  const normalised = values.map((v) => (span > 0 ? (v - lo) / span : 0));
  // Subtract the maximum before exponentiating so that small temperatures cannot overflow.
  const top = Math.max(...normalised) / temperature;
  const weights = normalised.map((n) => Math.exp(n / temperature - top));
  const total = weights.reduce((a, b) => a + b, 0);
  return weights.map((w) => w / total);
}
