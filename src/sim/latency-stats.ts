/** Mean, median and 99th percentile of a sample (NaN when empty). */
export interface Summary {
  readonly mean: number;
  readonly p50: number;
  readonly p99: number;
}

export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) return { mean: Number.NaN, p50: Number.NaN, p99: Number.NaN };
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
  return { mean: sorted.reduce((a, b) => a + b, 0) / sorted.length, p50: at(50), p99: at(99) };
}
