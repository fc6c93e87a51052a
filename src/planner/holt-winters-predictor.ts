import { type LoadPredictor, loadReading } from "./load-predictor.js";

/** Smoothing settings of additive Holt-Winters. */
export interface HoltWintersSettings {
  /** Readings per season m (a day of 60 s intervals is 1,440); an integer ≥ 2. */
  readonly seasonLength: number;
  /** Level smoothing α in [0, 1]. */
  readonly alpha: number;
  /** Trend smoothing β in [0, 1]. */
  readonly beta: number;
  /** Seasonal smoothing γ in [0, 1]. */
  readonly gamma: number;
}

/**
 * Additive Holt-Winters (Hyndman & Athanasopoulos, "Forecasting: Principles and Practice", §8.3),
 * fed online, one reading yₜ per interval, season length m.
 *
 * Before a full season is seen it is Holt's linear method (the same book, §8.2):
 *   t = 1:  ℓ = y₁, b = 0                          forecast ℓ
 *   t = 2:  ℓ = y₂, b = y₂ − y₁                    (the line through the first two readings)
 *   t > 2:  ℓₜ = α·yₜ + (1 − α)(ℓₜ₋₁ + bₜ₋₁)
 *           bₜ = β(ℓₜ − ℓₜ₋₁) + (1 − β)·bₜ₋₁         forecast ℓₜ + bₜ
 *
 * At t = m (the first season complete) the seasonal state starts from that season alone:
 *   ℓ = mean(y₁ … yₘ), b = 0, sᵢ = yᵢ − ℓ for i = 1 … m
 * The trend restarts at 0 because one season cannot tell a trend from the season's own shape (a
 * daily curve rising towards the evening would otherwise read as growth); β learns it again.
 *
 * For t > m, with sₜ₋ₘ the seasonal index of the same phase one season back:
 *   ℓₜ = α(yₜ − sₜ₋ₘ) + (1 − α)(ℓₜ₋₁ + bₜ₋₁)
 *   bₜ = β(ℓₜ − ℓₜ₋₁) + (1 − β)·bₜ₋₁
 *   sₜ = γ(yₜ − ℓₜ₋₁ − bₜ₋₁) + (1 − γ)·sₜ₋ₘ
 *   forecast ŷₜ₊₁ = ℓₜ + bₜ + sₜ₊₁₋ₘ, floored at 0.
 */
export class HoltWintersPredictor implements LoadPredictor {
  readonly name = "holt-winters";
  readonly #settings: HoltWintersSettings;
  /** The first season's readings, kept until the seasonal state starts. */
  readonly #firstSeason: number[] = [];
  /** sᵢ by phase (t − 1) mod m, once the first season is complete. */
  #seasonal: number[] | undefined;
  #level = 0;
  #trend = 0;
  #observations = 0;

  /** `settings`: validated by `compilePredictorOptions`. */
  constructor(settings: HoltWintersSettings) {
    this.#settings = settings;
  }

  get observations(): number {
    return this.#observations;
  }

  /** Whether the seasonal state has started (a full season has been seen). */
  get seasonal(): boolean {
    return this.#seasonal !== undefined;
  }

  observe(value: number): void {
    const y = loadReading(value);
    this.#observations++;
    const t = this.#observations;
    const { seasonLength, alpha, beta, gamma } = this.#settings;
    if (this.#seasonal === undefined) {
      this.#firstSeason.push(y);
      this.#holtStep(t, y);
      if (t === seasonLength) this.#startSeasons();
      return;
    }
    const phase = (t - 1) % seasonLength;
    const previousSeasonal = this.#seasonal[phase] ?? 0;
    const previousLevel = this.#level;
    const previousTrend = this.#trend;
    this.#level = alpha * (y - previousSeasonal) + (1 - alpha) * (previousLevel + previousTrend);
    this.#trend = beta * (this.#level - previousLevel) + (1 - beta) * previousTrend;
    this.#seasonal[phase] = gamma * (y - previousLevel - previousTrend) + (1 - gamma) * previousSeasonal;
  }

  predict(): number {
    if (this.#observations === 0) return 0;
    const seasonal = this.#seasonal === undefined ? 0 : (this.#seasonal[this.#observations % this.#settings.seasonLength] ?? 0);
    return Math.max(0, this.#level + this.#trend + seasonal);
  }

  #holtStep(t: number, y: number): void {
    if (t === 1) {
      this.#level = y;
      this.#trend = 0;
    } else if (t === 2) {
      this.#trend = y - this.#level;
      this.#level = y;
    } else {
      const { alpha, beta } = this.#settings;
      const previousLevel = this.#level;
      this.#level = alpha * y + (1 - alpha) * (previousLevel + this.#trend);
      this.#trend = beta * (this.#level - previousLevel) + (1 - beta) * this.#trend;
    }
  }

  #startSeasons(): void {
    let sum = 0;
    for (const y of this.#firstSeason) sum += y;
    this.#level = sum / this.#firstSeason.length;
    this.#trend = 0;
    this.#seasonal = this.#firstSeason.map((y) => y - this.#level);
    this.#firstSeason.length = 0;
  }
}
