/** Weight of the newest sample in the moving average. */
const ALPHA = 0.2;

/**
 * An exponentially weighted moving average of a rate (units per second), from samples of an
 * amount done in a measured time. Samples too small to measure well are ignored.
 */
export class RateMeter {
  readonly #minAmount: number;
  #rate: number | undefined;

  constructor(minAmount: number) {
    this.#minAmount = minAmount;
  }

  /** The averaged rate; undefined before the first sample. */
  get rate(): number | undefined {
    return this.#rate;
  }

  record(amount: number, seconds: number): void {
    if (amount < this.#minAmount || !(seconds > 0)) return;
    const sample = amount / seconds;
    this.#rate = this.#rate === undefined ? sample : this.#rate + ALPHA * (sample - this.#rate);
  }
}
