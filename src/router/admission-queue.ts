import { ArmatureError } from "../protocol/index.js";
import type { Clock } from "../runtime/index.js";

/** Where a request stands in the queue. */
export interface QueueTicket {
  /** Lower runs earlier (vLLM's `priority`). Default 0. */
  readonly priority?: number | undefined;
  /** When the request must have finished, on the queue's clock; undefined: no deadline. */
  readonly deadline?: number | undefined;
}

/** Why a request left the queue without running. */
export type ShedReason = "full" | "displaced" | "deadline";

export interface AdmissionQueueOptions {
  /** Requests that may wait; a request that finds it full is refused, or displaces a lower-ranked one. */
  readonly capacity: number;
  /** Measures the deadlines; needed only for requests that carry one. */
  readonly clock?: Clock | undefined;
  /**
   * How long a request still needs once admitted before its first token (ms): a waiter whose
   * deadline comes sooner than that from now is shed. Default 0: shed once the deadline has passed.
   */
  readonly leadTime?: (() => number) | undefined;
  /** Told of every request refused or shed, with why and its priority. */
  readonly onShed?: ((reason: ShedReason, priority: number) => void) | undefined;
}

interface Waiter {
  readonly priority: number;
  readonly deadline: number;
  /** Arrival order, for ties: first come, first served. */
  readonly seq: number;
  wake: () => void;
  shed: (error: unknown) => void;
  /** Cancels the deadline check. */
  disarm: () => void;
}

/**
 * Parking for requests that arrive while every worker is busy, ordered by priority (lower first),
 * then by deadline (sooner first; none last), then by arrival. Bounded: a request that finds the
 * queue full is refused at once (HTTP 503) unless it outranks the last waiter, which it then
 * displaces; a waiter whose deadline can no longer be met is shed (503) before it reaches a
 * worker. Nothing is dropped without its caller being told.
 */
export class AdmissionQueue {
  readonly #options: AdmissionQueueOptions;
  /** Sorted by rank, best first. */
  readonly #waiters: Waiter[] = [];
  #seq = 0;

  constructor(options: AdmissionQueueOptions) {
    this.#options = options;
  }

  get length(): number {
    return this.#waiters.length;
  }

  /**
   * Resolves when `canRun()` holds and every better-ranked waiter has gone; throws
   * `ROUTER_OVERLOADED` when the queue is full of requests that rank as high or higher, or when a
   * better one displaces it; `ROUTER_DEADLINE_UNREACHABLE` when its deadline can no longer be met;
   * and the signal's reason when the caller gives up (or had given up before it came: an aborted
   * request never takes a place).
   */
  async admit(canRun: () => boolean, signal: AbortSignal, ticket: QueueTicket = {}): Promise<void> {
    signal.throwIfAborted();
    if (this.#waiters.length === 0 && canRun()) return;
    const priority = ticket.priority ?? 0;
    const deadline = ticket.deadline ?? Number.POSITIVE_INFINITY;
    if (this.#unreachable(deadline)) throw this.#refuse("deadline", priority, this.#deadlineError());
    const seq = ++this.#seq;
    if (this.#waiters.length >= this.#options.capacity) {
      const last = this.#waiters.at(-1);
      if (!last || !outranks({ priority, deadline, seq }, last)) {
        throw this.#refuse(
          "full",
          priority,
          new ArmatureError(
            "ROUTER_OVERLOADED",
            `all workers are busy and ${this.#options.capacity} requests of this priority or higher are already waiting; retry later or add workers`,
            { retryable: true },
          ),
        );
      }
      this.#remove(last);
      last.shed(
        this.#refuse(
          "displaced",
          last.priority,
          new ArmatureError(
            "ROUTER_OVERLOADED",
            `all workers are busy and the queue is full; this request gave its place to one of higher priority (lower 'priority' runs earlier); retry later`,
            { retryable: true },
          ),
        ),
      );
    }
    // One abort listener and one place for the whole wait, however often the request is woken too early.
    let settle: { resolve: () => void; reject: (reason: unknown) => void } | undefined;
    const waiter: Waiter = {
      priority,
      deadline,
      seq,
      wake: () => settle?.resolve(),
      shed: (error) => {
        waiter.disarm();
        settle?.reject(error);
      },
      disarm: () => {},
    };
    // The request's own deadline passing while it waits sheds it before it reaches a worker.
    const abortError = (): unknown =>
      signal.reason instanceof ArmatureError && signal.reason.code === "REQUEST_TIMEOUT"
        ? this.#refuse("deadline", priority, this.#deadlineError())
        : signal.reason;
    const onAbort = (): void => {
      if (!this.#remove(waiter)) return; // woken meanwhile: the loop below sees the abort
      this.notify(canRun);
      waiter.shed(abortError());
    };
    signal.addEventListener("abort", onAbort, { once: true });
    this.#armDeadline(waiter);
    try {
      for (;;) {
        this.#insert(waiter);
        // At the head with room to run (waiters behind it may need more room than it does): go.
        if (this.#waiters[0] === waiter && canRun()) {
          this.#waiters.shift();
          return;
        }
        await new Promise<void>((resolve, reject) => {
          settle = { resolve, reject };
        });
        settle = undefined;
        if (signal.aborted) {
          this.notify(canRun); // the wake it took goes to the next waiter
          throw abortError();
        }
        if (canRun()) {
          // Let the next waiter try too: more than one worker may have freed up.
          this.notify(canRun);
          return;
        }
        // Woken too early (another request took the free worker): back to its place by rank.
      }
    } finally {
      waiter.disarm();
      signal.removeEventListener("abort", onAbort);
    }
  }

  /** Wakes the best-ranked waiter when capacity may have freed up. */
  notify(canRun: () => boolean = () => true): void {
    if (this.#waiters.length > 0 && canRun()) this.#waiters.shift()?.wake();
  }

  #unreachable(deadline: number): boolean {
    if (deadline === Number.POSITIVE_INFINITY) return false;
    return this.#now() + (this.#options.leadTime?.() ?? 0) >= deadline;
  }

  #now(): number {
    const clock = this.#options.clock;
    if (!clock) throw new Error("AdmissionQueue: a request carries a deadline but the queue has no clock");
    return clock.now();
  }

  /** Sheds the waiter once its deadline can no longer be met, re-checking as the lead time moves. */
  #armDeadline(waiter: Waiter): void {
    if (waiter.deadline === Number.POSITIVE_INFINITY) return;
    const clock = this.#options.clock as Clock;
    const check = (): void => {
      if (!this.#unreachable(waiter.deadline)) {
        const wait = waiter.deadline - (this.#options.leadTime?.() ?? 0) - clock.now();
        waiter.disarm = clock.timer(Math.max(1, wait), check);
        return;
      }
      if (!this.#remove(waiter)) return; // woken meanwhile: on its way to a worker
      waiter.shed(this.#refuse("deadline", waiter.priority, this.#deadlineError()));
    };
    const wait = waiter.deadline - (this.#options.leadTime?.() ?? 0) - clock.now();
    waiter.disarm = clock.timer(Math.max(1, wait), check);
  }

  #deadlineError(): ArmatureError {
    const lead = Math.round(this.#options.leadTime?.() ?? 0);
    return new ArmatureError(
      "ROUTER_DEADLINE_UNREACHABLE",
      `every worker is busy and this request's deadline would pass before its first token (recent requests took ${lead} ms from a free worker to their first token); retry with a later deadline or later`,
      { retryable: true },
    );
  }

  #refuse(reason: ShedReason, priority: number, error: ArmatureError): ArmatureError {
    this.#options.onShed?.(reason, priority);
    return error;
  }

  #insert(waiter: Waiter): void {
    // Binary search for the first waiter the new one outranks.
    let lo = 0;
    let hi = this.#waiters.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (outranks(waiter, this.#waiters[mid] as Waiter)) hi = mid;
      else lo = mid + 1;
    }
    this.#waiters.splice(lo, 0, waiter);
  }

  #remove(waiter: Waiter): boolean {
    const at = this.#waiters.indexOf(waiter);
    if (at < 0) return false;
    this.#waiters.splice(at, 1);
    return true;
  }
}

/** Whether `a` runs before `b`: lower priority number, then sooner deadline, then earlier arrival. */
function outranks(a: Pick<Waiter, "priority" | "deadline" | "seq">, b: Pick<Waiter, "priority" | "deadline" | "seq">): boolean {
  if (a.priority !== b.priority) return a.priority < b.priority;
  if (a.deadline !== b.deadline) return a.deadline < b.deadline;
  return a.seq < b.seq;
}
