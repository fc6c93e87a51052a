/** Samples kept per model: enough for a stable median, few enough to follow a change of load. */
const SAMPLES = 32;

/**
 * How long requests of each model took from leaving the admission queue to their first token,
 * as the median of the last 32: what a queued request still needs once a worker frees up, so the
 * queue can shed one whose deadline falls sooner. No samples yet: 0.
 */
export class FirstTokenLead {
  readonly #samples = new Map<string, { readonly ring: number[]; next: number }>();

  record(model: string, ms: number): void {
    let entry = this.#samples.get(model);
    if (!entry) {
      entry = { ring: [], next: 0 };
      this.#samples.set(model, entry);
    }
    if (entry.ring.length < SAMPLES) entry.ring.push(ms);
    else entry.ring[entry.next] = ms;
    entry.next = (entry.next + 1) % SAMPLES;
  }

  /** The median of the model's recent samples, in ms; 0 with none. */
  of(model: string): number {
    const ring = this.#samples.get(model)?.ring;
    if (!ring || ring.length === 0) return 0;
    const sorted = [...ring].sort((a, b) => a - b);
    const mid = sorted.length >>> 1;
    return sorted.length % 2 === 1 ? (sorted[mid] as number) : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
  }
}
