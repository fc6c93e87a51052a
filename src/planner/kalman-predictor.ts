import { type LoadPredictor, loadReading } from "./load-predictor.js";

/** Noise settings of the local linear trend Kalman filter (Dynamo's `kalman_*` defaults). */
export interface KalmanSettings {
  /** Process noise variance of the level, Q₀₀. Dynamo: 1.0. */
  readonly qLevel: number;
  /** Process noise variance of the slope, Q₁₁. Dynamo: 0.1. */
  readonly qTrend: number;
  /** Observation noise variance, R. Dynamo: 10.0. */
  readonly r: number;
  /** Variance of both state components after the first reading, P₀ = p₀·I. Dynamo: 1000 (filterpy's P *= 1000). */
  readonly initialVariance: number;
}

/**
 * A local linear trend model filtered by a Kalman filter: the state is x = [level ℓ, slope b].
 *
 *   transition  F = [[1, 1], [0, 1]]   (ℓ ← ℓ + b, b ← b), process noise Q = diag(qLevel, qTrend)
 *   observation H = [1, 0]              (a reading sees the level), observation noise R = r
 *
 * The first reading z₁ sets x = [z₁, 0] and P = p₀·I. Each later reading z runs one step:
 *
 *   predict  x⁻ = F·x                  P⁻ = F·P·Fᵀ + Q
 *            = [ℓ + b, b]              = [[P₀₀ + 2P₀₁ + P₁₁ + qLevel, P₀₁ + P₁₁], [P₀₁ + P₁₁, P₁₁ + qTrend]]
 *   update   y = z − x⁻₀   S = P⁻₀₀ + r   K = [P⁻₀₀ / S, P⁻₀₁ / S]
 *            x = x⁻ + K·y
 *            P = (I − K·H)·P⁻ = [[(1 − K₀)P⁻₀₀, (1 − K₀)P⁻₀₁], [(1 − K₀)P⁻₀₁, P⁻₁₁ − K₁P⁻₀₁]]
 *
 * `predict()` is the one-step-ahead forecast H·F·x = ℓ + b, floored at 0. Only the ratios qLevel/r
 * and qTrend/r shape the steady state, so one setting serves request rates and token counts alike.
 */
export class KalmanPredictor implements LoadPredictor {
  readonly name = "kalman";
  readonly #settings: KalmanSettings;
  #level = 0;
  #slope = 0;
  #p00 = 0;
  #p01 = 0;
  #p11 = 0;
  #observations = 0;

  /** `settings`: positive numbers, validated by `compilePredictorOptions`. */
  constructor(settings: KalmanSettings) {
    this.#settings = settings;
  }

  get observations(): number {
    return this.#observations;
  }

  observe(value: number): void {
    const z = loadReading(value);
    this.#observations++;
    if (this.#observations === 1) {
      this.#level = z;
      this.#slope = 0;
      this.#p00 = this.#settings.initialVariance;
      this.#p01 = 0;
      this.#p11 = this.#settings.initialVariance;
      return;
    }
    const { qLevel, qTrend, r } = this.#settings;
    // Predict.
    const level = this.#level + this.#slope;
    const p00 = this.#p00 + 2 * this.#p01 + this.#p11 + qLevel;
    const p01 = this.#p01 + this.#p11;
    const p11 = this.#p11 + qTrend;
    // Update.
    const innovation = z - level;
    const s = p00 + r;
    const k0 = p00 / s;
    const k1 = p01 / s;
    this.#level = level + k0 * innovation;
    this.#slope = this.#slope + k1 * innovation;
    this.#p00 = (1 - k0) * p00;
    this.#p01 = (1 - k0) * p01;
    this.#p11 = p11 - k1 * p01;
  }

  predict(): number {
    if (this.#observations === 0) return 0;
    return Math.max(0, this.#level + this.#slope);
  }
}
