import { type LoadPredictor, loadReading, type PredictorName } from "./load-predictor.js";
import { createPredictor, type PredictorOptions } from "./predictors.js";
import { type RecurrenceSetting, RecurringLoad, type RecurringPeriod } from "./recurring-load.js";

/** The traffic of one planner interval, observed or predicted. */
export interface IntervalLoad {
  /** Requests arriving per second. */
  readonly requestsPerSecond: number;
  /** Mean prompt length in tokens. */
  readonly meanInputTokens: number;
  /** Mean output length in tokens. */
  readonly meanOutputTokens: number;
  /** Fraction of prompt tokens found in a worker's KV cache, from 0 to 1. */
  readonly kvHitRate: number;
}

/**
 * `load` as the planner uses it: each quantity through `loadReading` (non-finite or negative → 0),
 * and the KV hit rate capped at 1.
 */
export function normalizeIntervalLoad(load: IntervalLoad): IntervalLoad {
  return {
    requestsPerSecond: loadReading(load.requestsPerSecond),
    meanInputTokens: loadReading(load.meanInputTokens),
    meanOutputTokens: loadReading(load.meanOutputTokens),
    kvHitRate: Math.min(1, loadReading(load.kvHitRate)),
  };
}

/**
 * Intervals of a recurring load the forecast covers: the next one and the one after, since a worker
 * ordered at the next decision is not up when that interval starts (any start-up at all).
 */
export const RECURRING_LOOKAHEAD = 2;

/**
 * Forecasts the next interval's load with one predictor per quantity (all of the same kind), as
 * Dynamo's throughput loop does for request count, ISL, OSL and KV hit rate. Where the request rate
 * repeats with a period (`RecurringLoad`), the forecast rate is the higher of the predictor's and
 * the period's peak over the next `RECURRING_LOOKAHEAD` intervals: a burst that recurs is
 * provisioned an interval before it arrives.
 */
export class LoadForecaster {
  readonly #rate: LoadPredictor;
  readonly #input: LoadPredictor;
  readonly #output: LoadPredictor;
  readonly #hitRate: LoadPredictor;
  readonly #recurringRate: RecurringLoad;

  /** Throws what `createPredictor` throws for a bad name or options. */
  constructor(predictor: PredictorName, options: PredictorOptions = {}, recurrence: RecurrenceSetting = { kind: "off" }) {
    this.#rate = createPredictor(predictor, options);
    this.#input = createPredictor(predictor, options);
    this.#output = createPredictor(predictor, options);
    this.#hitRate = createPredictor(predictor, options);
    this.#recurringRate = new RecurringLoad(recurrence);
  }

  /** The request rate's period in use, in intervals, if one was found (or given). */
  get recurringPeriod(): RecurringPeriod | undefined {
    return this.#recurringRate.period;
  }

  /** How many intervals have been observed. */
  get observations(): number {
    return this.#rate.observations;
  }

  /** Takes the load of the interval that just ended. */
  observe(load: IntervalLoad): void {
    this.#rate.observe(load.requestsPerSecond);
    this.#recurringRate.observe(load.requestsPerSecond);
    this.#input.observe(load.meanInputTokens);
    this.#output.observe(load.meanOutputTokens);
    this.#hitRate.observe(load.kvHitRate);
  }

  /** The forecast for the next interval (all zeros before the first observation). */
  forecast(): IntervalLoad {
    return normalizeIntervalLoad({
      requestsPerSecond: Math.max(this.#rate.predict(), this.#recurringPeak()),
      meanInputTokens: this.#input.predict(),
      meanOutputTokens: this.#output.predict(),
      kvHitRate: this.#hitRate.predict(),
    });
  }

  /** The highest rate the period repeats over the next `RECURRING_LOOKAHEAD` intervals; 0 without a period. */
  #recurringPeak(): number {
    let peak = 0;
    for (let steps = 1; steps <= RECURRING_LOOKAHEAD; steps++) peak = Math.max(peak, this.#recurringRate.ahead(steps) ?? 0);
    return peak;
  }
}
