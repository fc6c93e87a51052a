import { ArmatureError } from "../protocol/index.js";

interface Waiter {
  readonly wake: () => void;
}

/**
 * First come, first served parking for requests that arrive while every worker is busy. Bounded:
 * a request that finds the queue full is refused at once (HTTP 503), never silently dropped.
 */
export class AdmissionQueue {
  readonly #capacity: number;
  readonly #waiters: Waiter[] = [];

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  get length(): number {
    return this.#waiters.length;
  }

  /**
   * Resolves when `canRun()` holds and every earlier waiter has gone; throws `ROUTER_OVERLOADED`
   * when the queue is full, and the signal's reason when the caller gives up (or had given up
   * before it came: an aborted request never takes a place).
   */
  async admit(canRun: () => boolean, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.#waiters.length === 0 && canRun()) return;
    if (this.#waiters.length >= this.#capacity) {
      throw new ArmatureError(
        "ROUTER_OVERLOADED",
        `all workers are busy and ${this.#capacity} requests are already waiting; retry later or add workers`,
        { retryable: true },
      );
    }
    // One abort listener for the whole wait, however often the request is woken too early.
    let current: { waiter: Waiter; reject: (reason: unknown) => void } | undefined;
    const onAbort = (): void => {
      if (!current) return;
      const at = this.#waiters.indexOf(current.waiter);
      if (at >= 0) this.#waiters.splice(at, 1);
      current.reject(signal.reason);
      this.notify(canRun);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    try {
      for (let attempt = 0; ; attempt++) {
        await new Promise<void>((resolve, reject) => {
          const waiter: Waiter = { wake: resolve };
          current = { waiter, reject };
          // Woken too early (another request took the free worker): keep its place at the head.
          if (attempt === 0) this.#waiters.push(waiter);
          else this.#waiters.unshift(waiter);
        });
        current = undefined;
        if (canRun()) {
          // Let the next waiter try too: more than one worker may have freed up.
          this.notify(canRun);
          return;
        }
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Wakes the oldest waiter when capacity may have freed up. */
  notify(canRun: () => boolean = () => true): void {
    if (this.#waiters.length > 0 && canRun()) this.#waiters.shift()?.wake();
  }
}
