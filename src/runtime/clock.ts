/** Time as every component that waits or measures sees it: real, or virtual in the simulator. */
export interface Clock {
  /** Milliseconds since an arbitrary origin; monotonic. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Wall-clock time from `performance.now()`. */
export class RealClock implements Clock {
  now(): number {
    return performance.now();
  }

  /** Sleeps `ms`; below 1 ms (which timers cannot honour) it only yields to the event loop. */
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      if (ms < 1) {
        setImmediate(() => (signal?.aborted ? reject(signal.reason) : resolve()));
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      }, ms);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }
}

interface Timer {
  readonly at: number;
  readonly seq: number;
  readonly fire: () => void;
}

/**
 * Simulated time: `sleep` parks the caller until `advance`/`runUntilIdle` moves time past its
 * deadline. Timers with equal deadlines fire in the order they were set.
 */
export class VirtualClock implements Clock {
  #now: number;
  #seq = 0;
  #timers: Timer[] = [];

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer: Timer = { at: this.#now + Math.max(0, ms), seq: this.#seq++, fire: resolve };
      this.#timers.push(timer);
      signal?.addEventListener(
        "abort",
        () => {
          this.#timers = this.#timers.filter((t) => t !== timer);
          reject(signal.reason);
        },
        { once: true },
      );
    });
  }

  /** Number of sleepers waiting. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** Moves time forward by `ms`, firing every timer due on the way, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      const next = this.#earliest();
      if (next === undefined || next.at > target) break;
      this.#fire(next);
      await settle();
    }
    this.#now = target;
  }

  /** Fires timers in deadline order until none is left or `limitMs` of virtual time has passed. */
  async runUntilIdle(limitMs = Number.POSITIVE_INFINITY): Promise<void> {
    const stopAt = this.#now + limitMs;
    await settle();
    for (;;) {
      const next = this.#earliest();
      if (next === undefined || next.at > stopAt) return;
      this.#fire(next);
      await settle();
    }
  }

  #earliest(): Timer | undefined {
    let best: Timer | undefined;
    for (const t of this.#timers) {
      if (best === undefined || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
    }
    return best;
  }

  #fire(timer: Timer): void {
    this.#timers = this.#timers.filter((t) => t !== timer);
    this.#now = Math.max(this.#now, timer.at);
    timer.fire();
  }
}

/** Lets every already-resolved promise chain run before time moves again. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise<void>((resolve) => setImmediate(resolve));
}
