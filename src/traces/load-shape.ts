import type { SeededRandom } from "../engines/index.js";
import { ArmatureError } from "../protocol/index.js";

/** One step of a `step` shape: from `atSeconds` on, requests arrive at `rps` per second. */
export interface RateStep {
  readonly atSeconds: number;
  readonly rps: number;
}

/**
 * How the request rate λ(t) (requests per second, t in seconds from the trace start) changes:
 *
 * - `sine`: λ(t) = (min + max)/2 − (max − min)/2 · cos(2πt / period), which is Dynamo's `sin_synth`
 *   formula (min + max)/2 + (max − min)/2 · sin(2πt / period − π/2): it starts at the minimum, peaks at
 *   period/2 and is back at the minimum after each period. [--min-rate, --max-rate, --period]
 * - `step`: λ(t) is the `rps` of the last step with `atSeconds` ≤ t; the first step is at 0. [--steps]
 * - `burst`: `burstRps` during [k·every, k·every + length) for k = 1, 2, …, `baseRps` otherwise, so the
 *   trace opens with one quiet period. [--base-rate, --burst-rate, --burst-length, --burst-every]
 */
export type LoadShape =
  | { readonly kind: "sine"; readonly minRps: number; readonly maxRps: number; readonly periodSeconds: number }
  | { readonly kind: "step"; readonly steps: readonly RateStep[] }
  | {
      readonly kind: "burst";
      readonly baseRps: number;
      readonly burstRps: number;
      readonly burstLengthSeconds: number;
      readonly burstEverySeconds: number;
    };

/** The names `--shape` takes. */
export const LOAD_SHAPE_KINDS: readonly LoadShape["kind"][] = ["sine", "step", "burst"];

/** The request rate of `shape` at `tSeconds`, in requests per second. */
export function rateAt(shape: LoadShape, tSeconds: number): number {
  switch (shape.kind) {
    case "sine": {
      const middle = (shape.minRps + shape.maxRps) / 2;
      const amplitude = (shape.maxRps - shape.minRps) / 2;
      return middle - amplitude * Math.cos((2 * Math.PI * tSeconds) / shape.periodSeconds);
    }
    case "step": {
      let rps = 0;
      for (const step of shape.steps) {
        if (step.atSeconds > tSeconds) break;
        rps = step.rps;
      }
      return rps;
    }
    case "burst": {
      const cycle = Math.floor(tSeconds / shape.burstEverySeconds);
      const intoCycle = tSeconds - cycle * shape.burstEverySeconds;
      return cycle >= 1 && intoCycle < shape.burstLengthSeconds ? shape.burstRps : shape.baseRps;
    }
  }
}

/** The highest rate `shape` ever reaches: the envelope that thinning draws candidates at. */
export function peakRate(shape: LoadShape): number {
  switch (shape.kind) {
    case "sine":
      return shape.maxRps;
    case "step":
      return Math.max(0, ...shape.steps.map((s) => s.rps));
    case "burst":
      return Math.max(shape.baseRps, shape.burstRps);
  }
}

/**
 * Arrival times in seconds, ascending, of a non-homogeneous Poisson process with rate `rateAt(shape, t)`
 * on [0, durationSeconds), by thinning (Lewis and Shedler, 1979): candidates of a homogeneous process
 * at the peak rate, each kept with probability λ(t) / peak. Deterministic for a given `random` state.
 */
export function poissonArrivals(shape: LoadShape, durationSeconds: number, random: SeededRandom): number[] {
  const peak = peakRate(shape);
  const arrivals: number[] = [];
  if (peak <= 0) return arrivals;
  let t = 0;
  for (;;) {
    t += -Math.log(1 - random.next()) / peak;
    if (t >= durationSeconds) return arrivals;
    if (random.next() * peak < rateAt(shape, t)) arrivals.push(t);
  }
}

/**
 * Parses `--steps`: comma-separated `SECONDS:RATE` pairs, e.g. `0:2,600:10,1200:2`.
 * @throws ArmatureError CONFIG_INVALID naming `--steps` for a malformed pair.
 */
export function parseSteps(text: string): RateStep[] {
  return text.split(",").map((pair) => {
    const [at, rps, extra] = pair.split(":").map((part) => part.trim());
    if (at === undefined || rps === undefined || extra !== undefined || at === "" || rps === "") {
      throw invalid("--steps", `takes SECONDS:RATE pairs separated by commas (e.g. 0:2,600:10), got '${pair}'`);
    }
    return { atSeconds: Number(at), rps: Number(rps) };
  });
}

/**
 * Checks a shape's numbers.
 * @throws ArmatureError CONFIG_INVALID naming the flag that sets the bad value.
 */
export function validateLoadShape(shape: LoadShape): void {
  switch (shape.kind) {
    case "sine":
      nonNegative("--min-rate", shape.minRps);
      nonNegative("--max-rate", shape.maxRps);
      positive("--period", shape.periodSeconds);
      if (shape.minRps > shape.maxRps) {
        throw invalid("--min-rate", `(${shape.minRps}) is above --max-rate (${shape.maxRps})`);
      }
      if (shape.maxRps === 0) throw invalid("--max-rate", "must be above 0, or the trace has no requests");
      return;
    case "step": {
      shape.steps.forEach((step, i) => {
        nonNegative("--steps", step.atSeconds);
        nonNegative("--steps", step.rps);
        const before = shape.steps[i - 1];
        if (before !== undefined && step.atSeconds <= before.atSeconds) {
          throw invalid("--steps", `times must increase, got ${step.atSeconds} after ${before.atSeconds}`);
        }
      });
      if (shape.steps[0]?.atSeconds !== 0) throw invalid("--steps", "must start with a step at 0 seconds (0:RATE,…)");
      if (peakRate(shape) === 0) throw invalid("--steps", "needs a rate above 0 somewhere, or the trace has no requests");
      return;
    }
    case "burst":
      nonNegative("--base-rate", shape.baseRps);
      nonNegative("--burst-rate", shape.burstRps);
      positive("--burst-length", shape.burstLengthSeconds);
      positive("--burst-every", shape.burstEverySeconds);
      if (shape.burstLengthSeconds >= shape.burstEverySeconds) {
        throw invalid(
          "--burst-length",
          `(${shape.burstLengthSeconds} s) must be shorter than --burst-every (${shape.burstEverySeconds} s)`,
        );
      }
      if (peakRate(shape) === 0) throw invalid("--burst-rate", "or --base-rate must be above 0, or the trace has no requests");
      return;
  }
}

function nonNegative(flag: string, value: number): void {
  if (!Number.isFinite(value) || value < 0) throw invalid(flag, `must be a number ≥ 0, got ${value}`);
}

function positive(flag: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0) throw invalid(flag, `must be a number above 0, got ${value}`);
}

function invalid(flag: string, text: string): ArmatureError {
  return new ArmatureError("CONFIG_INVALID", `${flag} ${text}`, { param: flag });
}
