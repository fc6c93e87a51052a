import { loadReading } from "./load-predictor.js";

/** How the throughput loop looks for a load that repeats: found in the readings, given, or not at all. */
export type RecurrenceSetting =
  | { readonly kind: "auto" }
  | { readonly kind: "off" }
  /** A period given in readings (intervals), an integer ≥ 2. */
  | { readonly kind: "fixed"; readonly readings: number };

/** A period found in the readings: its length in readings and how well one period matches the next. */
export interface RecurringPeriod {
  readonly readings: number;
  /** The correlation of each reading with the one a period before it, from −1 to 1 (1 for a given period). */
  readonly correlation: number;
}

/** The correlation a lag must reach to count as the load's period. */
export const RECURRENCE_MIN_CORRELATION = 0.6;
/**
 * The least ratio of the variances of the readings and of the readings a period before them (the
 * smaller over the larger): a single burst paired with quiet readings correlates with whichever of
 * them the noise made highest, but it has not repeated, and one side holds all the variance.
 */
export const RECURRENCE_MIN_VARIANCE_RATIO = 0.25;
/** The fewest (reading, reading a period before) pairs a lag is judged on. */
export const RECURRENCE_MIN_PAIRS = 8;
/** Readings kept: a day of 60-s intervals. */
export const RECURRENCE_HISTORY = 1_440;
/** Periods looked back on for the value a phase repeats. */
const PERIODS_LOOKED_BACK = 3;

/**
 * Finds a period in one load quantity's readings and says what it repeats ahead, so that a load
 * that recurs (bursts every ten minutes, a daily peak) is provisioned before it arrives instead of
 * after: a reactive loop, and any predictor that extrapolates the last readings, sees a burst only
 * once it has started, and a worker started then misses it when its start-up is a good share of it.
 *
 * Detection (`auto`), after each reading: for every lag L from 2 to n/2 (n readings) with at least
 * `RECURRENCE_MIN_PAIRS` pairs, the Pearson correlation of the readings xᵢ with xᵢ₋ₗ (i from L to
 * n − 1); the lag of the highest correlation (the shortest of equals) is the period when that
 * correlation is at least `RECURRENCE_MIN_CORRELATION`, among the lags where neither side holds
 * four times the other's variance (`RECURRENCE_MIN_VARIANCE_RATIO`: the shape is on both sides). So a period is found once the load has been
 * seen to repeat: two periods and one reading (bursts every 10 intervals: after the second burst).
 * A flat history (no variance) has no period.
 *
 * What it repeats: `ahead(j)`, for the reading j after the last one, is the highest reading at the
 * same phase in the last (up to 3) periods: capacity for the largest of the recent repetitions, so
 * that a period that started before the first burst (a phase still at its base) does not halve it.
 */
export class RecurringLoad {
  readonly #setting: RecurrenceSetting;
  readonly #history: number[] = [];
  #period: RecurringPeriod | undefined;

  constructor(setting: RecurrenceSetting) {
    this.#setting = setting;
  }

  /** The period in use, if any (for a given period: once one period of readings is in). */
  get period(): RecurringPeriod | undefined {
    return this.#period;
  }

  /** Takes the reading of the interval that just ended (`loadReading`: not finite or negative → 0). */
  observe(value: number): void {
    if (this.#setting.kind === "off") return;
    this.#history.push(loadReading(value));
    if (this.#history.length > RECURRENCE_HISTORY) this.#history.shift();
    if (this.#setting.kind === "fixed") {
      const readings = this.#setting.readings;
      this.#period = this.#history.length >= readings ? { readings, correlation: 1 } : undefined;
      return;
    }
    this.#period = findPeriod(this.#history);
  }

  /**
   * What the period repeats `steps` readings after the last one (1: the next interval), or
   * undefined while there is no period.
   */
  ahead(steps: number): number | undefined {
    const period = this.#period;
    if (period === undefined) return undefined;
    const target = this.#history.length - 1 + steps;
    let highest: number | undefined;
    for (let k = 1; k <= PERIODS_LOOKED_BACK; k++) {
      const index = target - k * period.readings;
      if (index < 0) break;
      if (index >= this.#history.length) continue;
      highest = Math.max(highest ?? 0, this.#history[index] as number);
    }
    return highest;
  }
}

/** The best period of `history` as `RecurringLoad` describes it, or undefined. */
export function findPeriod(history: readonly number[]): RecurringPeriod | undefined {
  const n = history.length;
  let best: RecurringPeriod | undefined;
  // A load that merely persists (a slow rise, a plateau) correlates with itself a few readings
  // back without repeating anything: only lags past the first that correlates negatively count.
  let decorrelated = false;
  for (let lag = 1; 2 * lag <= n; lag++) {
    const lagged = laggedCorrelation(history, lag);
    if (lagged === undefined) continue;
    if (!decorrelated) {
      decorrelated = lagged.correlation < 0;
      continue;
    }
    if (n - lag < RECURRENCE_MIN_PAIRS || lagged.varianceRatio < RECURRENCE_MIN_VARIANCE_RATIO) continue;
    if (best === undefined || lagged.correlation > best.correlation) best = { readings: lag, correlation: lagged.correlation };
  }
  return best !== undefined && best.correlation >= RECURRENCE_MIN_CORRELATION ? best : undefined;
}

/**
 * Pearson's correlation of xᵢ with xᵢ₋ₗ over i = lag … n − 1, and the ratio of the two sides'
 * variances (the smaller over the larger); undefined when either side is flat.
 */
export function laggedCorrelation(
  history: readonly number[],
  lag: number,
): { readonly correlation: number; readonly varianceRatio: number } | undefined {
  const pairs = history.length - lag;
  let sumEarlier = 0;
  let sumLater = 0;
  for (let i = lag; i < history.length; i++) {
    sumEarlier += history[i - lag] as number;
    sumLater += history[i] as number;
  }
  const meanEarlier = sumEarlier / pairs;
  const meanLater = sumLater / pairs;
  let covariance = 0;
  let varianceEarlier = 0;
  let varianceLater = 0;
  for (let i = lag; i < history.length; i++) {
    const earlier = (history[i - lag] as number) - meanEarlier;
    const later = (history[i] as number) - meanLater;
    covariance += earlier * later;
    varianceEarlier += earlier * earlier;
    varianceLater += later * later;
  }
  // Flat within rounding: a constant reading leaves a variance of a few ulps, not a shape.
  const flat = (variance: number, mean: number) => variance <= 1e-12 * pairs * (1 + mean * mean);
  if (flat(varianceEarlier, meanEarlier) || flat(varianceLater, meanLater)) return undefined;
  return {
    correlation: covariance / Math.sqrt(varianceEarlier * varianceLater),
    varianceRatio: Math.min(varianceEarlier, varianceLater) / Math.max(varianceEarlier, varianceLater),
  };
}
