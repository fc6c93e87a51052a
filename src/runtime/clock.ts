/** Time as every component that waits or measures sees it: real, or virtual in the simulator. */
export interface Clock {
  /** Milliseconds since an arbitrary origin; monotonic. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason when aborted. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `fire` after `ms` unless the returned function is called first (no promise, no signal). */
  timer(ms: number, fire: () => void): () => void;
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

  timer(ms: number, fire: () => void): () => void {
    const timer = setTimeout(fire, ms);
    return () => clearTimeout(timer);
  }
}

interface Timer {
  readonly at: number;
  readonly seq: number;
  fire(): void;
  cancelled: boolean;
}

/*
 * The virtual clock's timers are classes rather than objects of closures: a replay sets millions of
 * them, and a closure bound to a name (`const fire = () => …`) costs a property definition each
 * time under the loader's keep-names transform (7% of a replay's samples, measured).
 */

/** A `sleep`: resolves when fired; rejects, and counts itself out, when its signal aborts first. */
class SleepTimer implements Timer {
  readonly at: number;
  readonly seq: number;
  cancelled = false;
  readonly #counter: { unlive(): void };
  readonly #resolve: () => void;
  readonly #reject: (reason: unknown) => void;
  readonly #signal: AbortSignal | undefined;

  constructor(
    at: number,
    seq: number,
    counter: { unlive(): void },
    resolve: () => void,
    reject: (reason: unknown) => void,
    signal: AbortSignal | undefined,
  ) {
    this.at = at;
    this.seq = seq;
    this.#counter = counter;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#signal = signal;
  }

  fire(): void {
    // A fired timer lets go of the signal: loops that sleep on one long-lived signal must not pile up listeners.
    this.#signal?.removeEventListener("abort", this);
    this.#resolve();
  }

  /** The signal aborted (an `EventListener` object, so no closure is made per sleep). */
  handleEvent(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.#counter.unlive();
    this.#reject(this.#signal?.reason);
  }
}

/** A `timer`: calls its callback once unless cancelled first. */
class CallbackTimer implements Timer {
  readonly at: number;
  readonly seq: number;
  cancelled = false;
  readonly #callback: () => void;

  constructor(at: number, seq: number, callback: () => void) {
    this.at = at;
    this.seq = seq;
    this.#callback = callback;
  }

  fire(): void {
    // Fired: a later cancel has nothing left to take back.
    this.cancelled = true;
    this.#callback();
  }
}

/**
 * Simulated time: `sleep` parks the caller until `advance`/`runUntilIdle` moves time past its
 * deadline. Timers with equal deadlines fire in the order they were set. Timers live in a binary
 * heap, so a replay with millions of engine steps stays O(log n) per step.
 */
export class VirtualClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #heap: Timer[] = [];
  #live = 0;
  /** Real work (I/O) time waits for, settled or not. */
  readonly #holds = new Set<Promise<void>>();
  /** Lets an aborted sleep count itself out of `pendingTimers`. */
  readonly #counter = { unlive: (): void => void this.#live-- };

  constructor(startMs = 0) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const timer = new SleepTimer(this.#now + Math.max(0, ms), this.#seq++, this.#counter, resolve, reject, signal);
      this.#push(timer);
      this.#live++;
      signal?.addEventListener("abort", timer, { once: true });
    });
  }

  timer(ms: number, fire: () => void): () => void {
    const timer = new CallbackTimer(this.#now + Math.max(0, ms), this.#seq++, fire);
    this.#push(timer);
    this.#live++;
    return () => {
      if (timer.cancelled) return;
      timer.cancelled = true;
      this.#live--;
    };
  }

  /** Number of sleepers waiting. */
  get pendingTimers(): number {
    return this.#live;
  }

  /**
   * Keeps time still until `work` settles, and returns it. For real I/O the simulated world takes
   * as instant (a worker opening its listener as it starts): without the hold, time would move on
   * by however many timers fire while the I/O is out, and a run would not repeat. Code that does not
   * wait on the clock keeps running meanwhile. `work` must not itself wait on this clock.
   */
  hold<T>(work: Promise<T>): Promise<T> {
    const settled = work.then(
      () => undefined,
      () => undefined,
    );
    this.#holds.add(settled);
    void settled.then(() => this.#holds.delete(settled));
    return work;
  }

  /** Moves time forward by `ms`, firing every timer due on the way, in order. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    await this.#runWhile((at) => at <= target);
    this.#now = Math.max(this.#now, target);
  }

  /** Fires timers in deadline order until none is left or `limitMs` of virtual time has passed. */
  async runUntilIdle(limitMs = Number.POSITIVE_INFINITY): Promise<void> {
    const stopAt = this.#now + limitMs;
    await settle();
    await this.#runWhile((at) => at <= stopAt);
  }

  async #runWhile(due: (at: number) => boolean): Promise<void> {
    for (;;) {
      await this.#released();
      const next = this.#peek();
      if (next === undefined || !due(next.at)) return;
      // Fire every timer of this instant, then let the code they woke run before time moves on.
      const at = next.at;
      this.#now = Math.max(this.#now, at);
      for (let t = this.#peek(); t !== undefined && t.at === at; t = this.#peek()) {
        this.#pop();
        this.#live--;
        t.fire();
      }
      await settle();
    }
  }

  /** Waits out every hold, letting the code each one resumes run before time moves. */
  async #released(): Promise<void> {
    while (this.#holds.size > 0) {
      await Promise.all(this.#holds);
      await settle();
    }
  }

  #peek(): Timer | undefined {
    // Drop timers cancelled by their signal.
    while (this.#heap.length > 0 && (this.#heap[0] as Timer).cancelled) this.#pop();
    return this.#heap[0];
  }

  #push(timer: Timer): void {
    const heap = this.#heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i] as Timer, heap[parent] as Timer)) break;
      [heap[i], heap[parent]] = [heap[parent] as Timer, heap[i] as Timer];
      i = parent;
    }
  }

  #pop(): Timer | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (heap.length > 0 && last !== undefined) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l] as Timer, heap[m] as Timer)) m = l;
        if (r < heap.length && before(heap[r] as Timer, heap[m] as Timer)) m = r;
        if (m === i) break;
        [heap[i], heap[m]] = [heap[m] as Timer, heap[i] as Timer];
        i = m;
      }
    }
    return top;
  }
}

function before(a: Timer, b: Timer): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

/** Wall time of the last turn of the event loop a settle took. */
let lastTurn = performance.now();

/**
 * Lets every promise chain that is ready run before time moves again. A tick queued from a
 * microtask runs once the microtask queue is empty, so most settles cost no turn of the event loop;
 * every few milliseconds of wall time one takes a turn (`setImmediate`), so real I/O is never starved.
 */
function settle(): Promise<void> {
  const now = performance.now();
  if (now - lastTurn < 5) return new Promise<void>((resolve) => process.nextTick(resolve));
  lastTurn = now;
  return new Promise<void>((resolve) => setImmediate(resolve));
}
