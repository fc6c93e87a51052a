/** Longest accepted stop string, in characters (the API refuses longer ones by name). */
export const MAX_STOP_LENGTH = 512;

/** One stop string with its KMP failure table: `fail[i]` is the longest proper border of `text[0..i]`. */
interface Stop {
  readonly text: string;
  readonly fail: Int32Array;
  /** Characters of `text` matched by the end of the text seen so far. */
  matched: number;
}

/**
 * Finds stop strings in streamed text, even when one spans several deltas. Text that might be the
 * start of a stop string is held back until it is known not to be (Dynamo's "jail"). Each stop is
 * a KMP automaton fed one character at a time, so a token costs time linear in its text, whatever
 * the stops' lengths.
 */
export class StopMatcher {
  readonly #stops: Stop[];
  #held = "";
  #found: string | undefined;

  constructor(stops: readonly string[]) {
    this.#stops = stops.filter((s) => s.length > 0).map((text) => ({ text, fail: failureTable(text), matched: 0 }));
  }

  /**
   * Adds text. Returns the text safe to emit and whether a stop string was found (in which case
   * the text before it is returned and everything after is dropped).
   */
  push(text: string): { text: string; stopped: boolean } {
    if (this.#stops.length === 0) return { text, stopped: false };
    const buffer = this.#held + text;
    for (let i = 0; i < text.length; i++) {
      const char = text.charCodeAt(i);
      for (const stop of this.#stops) {
        if (advance(stop, char) === stop.text.length) return this.#stopAt(buffer);
      }
    }
    // Hold back the longest tail that may still grow into a stop string.
    let keep = 0;
    for (const stop of this.#stops) keep = Math.max(keep, stop.matched);
    this.#held = buffer.slice(buffer.length - keep);
    return { text: buffer.slice(0, buffer.length - keep), stopped: false };
  }

  /** The stop string that ended the text (the earliest in it), once one has. */
  get found(): string | undefined {
    return this.#found;
  }

  /** The held-back text, at the end of the stream. */
  flush(): string {
    const rest = this.#held;
    this.#held = "";
    return rest;
  }

  /** A stop string completed in `buffer` (held text plus this delta): cut at the earliest one. */
  #stopAt(buffer: string): { text: string; stopped: true } {
    let first = buffer.length;
    for (const stop of this.#stops) {
      const at = buffer.indexOf(stop.text);
      if (at >= 0 && at < first) {
        first = at;
        this.#found = stop.text;
      }
    }
    this.#held = "";
    return { text: buffer.slice(0, first), stopped: true };
  }
}

function failureTable(text: string): Int32Array {
  const fail = new Int32Array(text.length);
  let k = 0;
  for (let i = 1; i < text.length; i++) {
    while (k > 0 && text.charCodeAt(i) !== text.charCodeAt(k)) k = fail[k - 1] as number;
    if (text.charCodeAt(i) === text.charCodeAt(k)) k++;
    fail[i] = k;
  }
  return fail;
}

/** Feeds one character to a stop's automaton; returns how much of the stop is now matched. */
function advance(stop: Stop, char: number): number {
  let k = stop.matched;
  if (k === stop.text.length) k = stop.fail[k - 1] as number;
  while (k > 0 && char !== stop.text.charCodeAt(k)) k = stop.fail[k - 1] as number;
  if (char === stop.text.charCodeAt(k)) k++;
  stop.matched = k;
  return k;
}
