import { ArmatureError } from "../protocol/index.js";
import { HoltWintersPredictor, type HoltWintersSettings } from "./holt-winters-predictor.js";
import { KalmanPredictor, type KalmanSettings } from "./kalman-predictor.js";
import {
  ConstantPredictor,
  type LoadPredictor,
  MovingAveragePredictor,
  PREDICTOR_NAMES,
  type PredictorName,
} from "./load-predictor.js";

/** Settings of every predictor; each predictor reads only its own part. */
export interface PredictorOptions {
  /** `moving-average`: how many readings to average. Default 5 (a lag of 2 intervals). */
  readonly movingAverageWindow?: number;
  /** `kalman`: noise settings. Defaults are Dynamo's: qLevel 1.0, qTrend 0.1, r 10.0, initialVariance 1000. */
  readonly kalman?: Partial<KalmanSettings>;
  /**
   * `holt-winters`: season length (in readings, required for `holt-winters`; the planner's options
   * derive it from a season in seconds) and smoothing weights, default α 0.5, β 0.1, γ 0.3.
   */
  readonly holtWinters?: Partial<HoltWintersSettings>;
}

/** `PredictorOptions` with every default filled in; `holtWinters` only when a season length was given. */
export interface CompiledPredictorOptions {
  readonly movingAverageWindow: number;
  readonly kalman: KalmanSettings;
  readonly holtWinters: HoltWintersSettings | undefined;
}

const DEFAULT_MOVING_AVERAGE_WINDOW = 5;
const DEFAULT_KALMAN: KalmanSettings = { qLevel: 1.0, qTrend: 0.1, r: 10.0, initialVariance: 1000 };
const DEFAULT_HOLT_WINTERS = { alpha: 0.5, beta: 0.1, gamma: 0.3 } as const;

/** Whether `name` is one of `PREDICTOR_NAMES`. */
export function isPredictorName(name: string): name is PredictorName {
  return (PREDICTOR_NAMES as readonly string[]).includes(name);
}

/**
 * Fills in the defaults of `options` and checks them once.
 * Throws ArmatureError `CONFIG_INVALID` naming the option (`predictorOptions.kalman.r`, …) and the value.
 */
export function compilePredictorOptions(options: PredictorOptions = {}): CompiledPredictorOptions {
  const movingAverageWindow = options.movingAverageWindow ?? DEFAULT_MOVING_AVERAGE_WINDOW;
  requireInteger("movingAverageWindow", movingAverageWindow, 1);
  const kalman = { ...DEFAULT_KALMAN, ...options.kalman };
  for (const key of ["qLevel", "qTrend", "r", "initialVariance"] as const) requirePositive(`kalman.${key}`, kalman[key]);
  let holtWinters: HoltWintersSettings | undefined;
  const givenHoltWinters = options.holtWinters ?? {};
  const weights = { ...DEFAULT_HOLT_WINTERS, ...givenHoltWinters };
  for (const key of ["alpha", "beta", "gamma"] as const) requireFraction(`holtWinters.${key}`, weights[key]);
  if (givenHoltWinters.seasonLength !== undefined) {
    requireInteger("holtWinters.seasonLength", givenHoltWinters.seasonLength, 2);
    holtWinters = { ...weights, seasonLength: givenHoltWinters.seasonLength };
  }
  return { movingAverageWindow, kalman, holtWinters };
}

/**
 * A new predictor of the given name.
 * Throws ArmatureError `CONFIG_INVALID` for an unknown name (the message lists the names), for bad
 * options (see `compilePredictorOptions`), and for `holt-winters` without a season length.
 */
export function createPredictor(name: string, options: PredictorOptions = {}): LoadPredictor {
  if (!isPredictorName(name)) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--predictor "${name}" is not a predictor; use one of ${PREDICTOR_NAMES.join(", ")}`,
    );
  }
  // Compiled options are options too: compiling them again changes nothing.
  const compiled = compilePredictorOptions(options);
  switch (name) {
    case "constant":
      return new ConstantPredictor();
    case "moving-average":
      return new MovingAveragePredictor(compiled.movingAverageWindow);
    case "kalman":
      return new KalmanPredictor(compiled.kalman);
    case "holt-winters":
      if (compiled.holtWinters === undefined) {
        throw new ArmatureError(
          "CONFIG_INVALID",
          "--predictor holt-winters needs a season length: set predictorOptions.holtWinters.seasonLength (readings per season)",
        );
      }
      return new HoltWintersPredictor(compiled.holtWinters);
  }
}

function invalid(option: string, rule: string, value: unknown): ArmatureError {
  return new ArmatureError("CONFIG_INVALID", `predictorOptions.${option} must be ${rule}, got ${String(value)}`);
}

function requireInteger(option: string, value: number, minimum: number): void {
  if (!Number.isInteger(value) || value < minimum) throw invalid(option, `an integer ≥ ${minimum}`, value);
}

function requirePositive(option: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0) throw invalid(option, "a positive number", value);
}

function requireFraction(option: string, value: number): void {
  if (!Number.isFinite(value) || value < 0 || value > 1) throw invalid(option, "a number from 0 to 1", value);
}
