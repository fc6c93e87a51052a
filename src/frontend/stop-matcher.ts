/**
 * Finds stop strings in streamed text, even when one spans several deltas. Text that might be the
 * start of a stop string is held back until it is known not to be (Dynamo's "jail").
 */
export class StopMatcher {
  readonly #stops: readonly string[];
  #held = "";

  constructor(stops: readonly string[]) {
    this.#stops = stops.filter((s) => s.length > 0);
  }

  /**
   * Adds text. Returns the text safe to emit and whether a stop string was found (in which case
   * the text before it is returned and everything after is dropped).
   */
  push(text: string): { text: string; stopped: boolean } {
    if (this.#stops.length === 0) return { text, stopped: false };
    const buffer = this.#held + text;
    let first = -1;
    for (const stop of this.#stops) {
      const at = buffer.indexOf(stop);
      if (at >= 0 && (first < 0 || at < first)) first = at;
    }
    if (first >= 0) {
      this.#held = "";
      return { text: buffer.slice(0, first), stopped: true };
    }
    const keep = this.#longestStopPrefixSuffix(buffer);
    this.#held = buffer.slice(buffer.length - keep);
    return { text: buffer.slice(0, buffer.length - keep), stopped: false };
  }

  /** The held-back text, at the end of the stream. */
  flush(): string {
    const rest = this.#held;
    this.#held = "";
    return rest;
  }

  #longestStopPrefixSuffix(buffer: string): number {
    let best = 0;
    for (const stop of this.#stops) {
      for (let n = Math.min(stop.length - 1, buffer.length); n > best; n--) {
        if (buffer.endsWith(stop.slice(0, n))) {
          best = n;
          break;
        }
      }
    }
    return best;
  }
}
