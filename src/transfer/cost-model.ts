import type { BackendName } from "./descriptors.js";

/** `T = alpha + bytes / bandwidth` for one backend. */
export interface CostModel {
  /** Fixed cost of one transfer, in milliseconds. */
  readonly alphaMs: number;
  /** Sustained bandwidth, in bytes per millisecond (1 GB/s = 1e6). */
  readonly bytesPerMs: number;
}

/**
 * Defaults measured on a 2-core cloud VM (../docs/benchmarks.md, transfer section): memcpy ~10 GB/s,
 * tmpfs reads ~5 GB/s, loopback TCP ~2.5 GB/s. Agents replace them with `calibrate()` or configuration.
 */
export const defaultCostModels: Readonly<Record<BackendName, CostModel>> = {
  memory: { alphaMs: 0.005, bytesPerMs: 8e6 },
  file: { alphaMs: 0.05, bytesPerMs: 3e6 },
  object: { alphaMs: 0.05, bytesPerMs: 3e6 },
  shm: { alphaMs: 0.05, bytesPerMs: 4e6 },
  tcp: { alphaMs: 0.15, bytesPerMs: 2e6 },
};

/** Modelled milliseconds to move `bytes` with `model`. */
export function transferMs(model: CostModel, bytes: number): number {
  return model.alphaMs + bytes / model.bytesPerMs;
}

/** A cost model from two timed transfers of different sizes (least squares through both points). */
export function fitCostModel(small: { bytes: number; ms: number }, large: { bytes: number; ms: number }): CostModel {
  const slope = (large.ms - small.ms) / Math.max(1, large.bytes - small.bytes);
  const bytesPerMs = slope > 0 ? 1 / slope : large.bytes / Math.max(large.ms, 1e-6);
  const alphaMs = Math.max(0, small.ms - small.bytes / bytesPerMs);
  return { alphaMs, bytesPerMs };
}
