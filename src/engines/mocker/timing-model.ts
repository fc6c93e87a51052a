import { readFile } from "node:fs/promises";

/** Predicts how long an engine step takes. */
export interface TimingModel {
  /** Milliseconds to prefill `newTokens` uncached tokens in one pass. */
  prefillMs(newTokens: number): number;
  /** Milliseconds for one decode step at `kvUsage` = active KV tokens / total KV tokens. */
  decodeMs(kvUsage: number): number;
}

/** Dynamo mocker's default polynomial fits (H100-class engine), divided by the speedup ratio. */
export function polynomialTimingModel(speedupRatio = 1): TimingModel {
  return {
    prefillMs: (t) => (t <= 0 ? 0 : (4.209989e-7 * t * t + 1.518344e-2 * t + 16.50142) / speedupRatio),
    decodeMs: (u) => Math.max(1, -25.74 * u * u + 54.01 * u + 5.74) / speedupRatio,
  };
}

/** A measured profile: points of prefill time by new tokens and decode step time by KV usage. */
export interface TimingProfile {
  readonly prefill: { readonly tokens: readonly number[]; readonly ms: readonly number[] };
  readonly decode: { readonly kvUsage: readonly number[]; readonly ms: readonly number[] };
}

/** Linear interpolation over a profile, extrapolating from the end segments. */
export function profiledTimingModel(profile: TimingProfile, speedupRatio = 1): TimingModel {
  return {
    prefillMs: (t) => (t <= 0 ? 0 : Math.max(0, interpolate(profile.prefill.tokens, profile.prefill.ms, t)) / speedupRatio),
    decodeMs: (u) => Math.max(0, interpolate(profile.decode.kvUsage, profile.decode.ms, u)) / speedupRatio,
  };
}

/** Reads a profile JSON file (`{"prefill":{"tokens":[…],"ms":[…]},"decode":{"kvUsage":[…],"ms":[…]}}`). */
export async function loadTimingProfile(path: string): Promise<TimingProfile> {
  const profile = JSON.parse(await readFile(path, "utf8")) as TimingProfile;
  for (const [name, xs, ys] of [
    ["prefill", profile.prefill?.tokens, profile.prefill?.ms],
    ["decode", profile.decode?.kvUsage, profile.decode?.ms],
  ] as const) {
    if (!Array.isArray(xs) || !Array.isArray(ys) || xs.length < 2 || xs.length !== ys.length) {
      throw new Error(`timing profile ${path}: "${name}" needs two arrays of equal length, at least 2 points`);
    }
  }
  return profile;
}

function interpolate(xs: readonly number[], ys: readonly number[], x: number): number {
  let i = 1;
  while (i < xs.length - 1 && (xs[i] ?? 0) < x) i++;
  const x0 = xs[i - 1] ?? 0;
  const x1 = xs[i] ?? 1;
  const y0 = ys[i - 1] ?? 0;
  const y1 = ys[i] ?? 0;
  return x1 === x0 ? y0 : y0 + ((y1 - y0) * (x - x0)) / (x1 - x0);
}
