import type { WorkerProfile } from "./profile.js";

/** A prefill operating point read from a profile. */
export interface PrefillEstimate {
  readonly ttftMs: number;
  readonly tokensPerSecond: number;
  /** What the prefill adds to the decode steps it joins, where the profile measured it. */
  readonly interleavedMs: number | undefined;
  /** True when the input length lay outside the profiled range and the edge point's values were used. */
  readonly clamped: boolean;
}

/** A decode operating point read from a profile. */
export interface DecodeEstimate {
  readonly itlMs: number;
  readonly tokensPerSecond: number;
  readonly kvUsage: number;
  /** True when the concurrency or the context length lay outside the profiled grid. */
  readonly clamped: boolean;
}

/**
 * Where `x` falls on an ascending axis: between `axis[lower]` and `axis[upper]`, at `weight` from
 * the lower one (0 at the lower point, 1 at the upper). Outside the axis it sticks to the edge point.
 */
export interface AxisPosition {
  readonly lower: number;
  readonly upper: number;
  readonly weight: number;
  readonly clamped: boolean;
}

/** Locates `x` on the ascending, non-empty `axis` (see `AxisPosition`). */
export function locateOnAxis(axis: readonly number[], x: number): AxisPosition {
  const last = axis.length - 1;
  if (x <= axis[0]!) return { lower: 0, upper: 0, weight: 0, clamped: x < axis[0]! };
  if (x >= axis[last]!) return { lower: last, upper: last, weight: 0, clamped: x > axis[last]! };
  let upper = 1;
  while (axis[upper]! < x) upper++;
  const lower = upper - 1;
  return { lower, upper, weight: (x - axis[lower]!) / (axis[upper]! - axis[lower]!), clamped: false };
}

function between(a: number, b: number, weight: number): number {
  return a + (b - a) * weight;
}

/**
 * TTFT and prefill throughput at `inputTokens` uncached tokens: piecewise linear between the two
 * profiled input lengths around it; below the shortest or above the longest, that point's values.
 */
export function interpolatePrefill(profile: WorkerProfile, inputTokens: number): PrefillEstimate {
  const points = profile.prefill;
  const at = locateOnAxis(
    points.map((p) => p.inputTokens),
    inputTokens,
  );
  const a = points[at.lower]!;
  const b = points[at.upper]!;
  return {
    ttftMs: between(a.ttftMs, b.ttftMs, at.weight),
    tokensPerSecond: between(a.tokensPerSecond, b.tokensPerSecond, at.weight),
    interleavedMs:
      a.interleavedMs === undefined || b.interleavedMs === undefined
        ? undefined
        : between(a.interleavedMs, b.interleavedMs, at.weight),
    clamped: at.clamped,
  };
}

/**
 * ITL, throughput and KV usage at (`concurrency`, `contextTokens`): bilinear over the grid cell around
 * the point. With u the weight along concurrency and v along context length, and f₀₀ f₁₀ f₀₁ f₁₁ the
 * cell's corners (first index concurrency, second context):
 *   f = (1 − u)(1 − v)·f₀₀ + u(1 − v)·f₁₀ + (1 − u)v·f₀₁ + uv·f₁₁
 * Outside the grid each coordinate is clamped to the nearest edge first.
 */
export function interpolateDecode(profile: WorkerProfile, concurrency: number, contextTokens: number): DecodeEstimate {
  const grid = profile.decode;
  const c = locateOnAxis(grid.concurrency, concurrency);
  const l = locateOnAxis(grid.contextTokens, contextTokens);
  const f00 = grid.cells[c.lower]![l.lower]!;
  const f10 = grid.cells[c.upper]![l.lower]!;
  const f01 = grid.cells[c.lower]![l.upper]!;
  const f11 = grid.cells[c.upper]![l.upper]!;
  const bilinear = (field: "itlMs" | "tokensPerSecond" | "kvUsage"): number =>
    between(between(f00[field], f10[field], c.weight), between(f01[field], f11[field], c.weight), l.weight);
  return {
    itlMs: bilinear("itlMs"),
    tokensPerSecond: bilinear("tokensPerSecond"),
    kvUsage: bilinear("kvUsage"),
    clamped: c.clamped || l.clamped,
  };
}
