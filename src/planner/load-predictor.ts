/** The names `createPredictor` accepts, in the order the docs list them. */
export const PREDICTOR_NAMES = ["constant", "moving-average", "kalman", "holt-winters"] as const;

/** A load predictor's name: `constant`, `moving-average`, `kalman` or `holt-winters`. */
export type PredictorName = (typeof PREDICTOR_NAMES)[number];

/**
 * Forecasts one load quantity (request rate, mean input length, …) one planner interval ahead.
 *
 * The caller feeds one reading per interval with `observe` and asks `predict` for the next interval.
 * `predict` does not change the predictor: calling it twice gives the same answer. Before the first
 * reading every predictor predicts 0. Predictions are never negative (load cannot be).
 */
export interface LoadPredictor {
  readonly name: PredictorName;
  /** How many readings the predictor has taken. */
  readonly observations: number;
  /** Takes the reading of the interval that just ended (see `loadReading` for what is accepted). */
  observe(value: number): void;
  /** The forecast for the next interval. */
  predict(): number;
}

/**
 * The value a predictor records for a reading: a reading that is not a finite number (a metrics gap,
 * 0/0 for the mean length of no requests) counts as 0, as in Dynamo's planner; a negative one counts
 * as 0 too, since no load quantity is negative.
 */
export function loadReading(value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0;
}

/** Predicts that the next interval repeats the last one (Dynamo's `constant`). */
export class ConstantPredictor implements LoadPredictor {
  readonly name = "constant";
  #last = 0;
  #observations = 0;

  get observations(): number {
    return this.#observations;
  }

  observe(value: number): void {
    this.#last = loadReading(value);
    this.#observations++;
  }

  predict(): number {
    return this.#last;
  }
}

/**
 * Predicts the mean of the last `windowSize` readings (all readings while there are fewer).
 * It follows a change with a lag of (windowSize − 1) / 2 intervals and smooths noise by the same count.
 */
export class MovingAveragePredictor implements LoadPredictor {
  readonly name = "moving-average";
  readonly #windowSize: number;
  readonly #window: number[] = [];
  #observations = 0;

  /** `windowSize`: a positive integer, validated by `compilePredictorOptions`. */
  constructor(windowSize: number) {
    this.#windowSize = windowSize;
  }

  get observations(): number {
    return this.#observations;
  }

  observe(value: number): void {
    this.#window.push(loadReading(value));
    if (this.#window.length > this.#windowSize) this.#window.shift();
    this.#observations++;
  }

  predict(): number {
    if (this.#window.length === 0) return 0;
    let sum = 0;
    for (const value of this.#window) sum += value;
    return sum / this.#window.length;
  }
}
