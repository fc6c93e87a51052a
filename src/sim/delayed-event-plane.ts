import type { Clock, EventPlane, Unsubscribe } from "../runtime/index.js";

interface Pending {
  readonly at: number;
  readonly subject: string;
  readonly payload: unknown;
}

/**
 * Messages of one delay, in publish order. Messages published at one instant share one timer, so a
 * replay's millions of KV event batches cost one timer per engine step, not one each.
 */
class DelayLine {
  readonly #delayMs: number;
  readonly #clock: Clock;
  readonly #deliver: (subject: string, payload: unknown) => void;
  readonly #queue: Pending[] = [];
  /** The first message not yet delivered. */
  #head = 0;

  constructor(delayMs: number, clock: Clock, deliver: (subject: string, payload: unknown) => void) {
    this.#delayMs = delayMs;
    this.#clock = clock;
    this.#deliver = deliver;
  }

  push(subject: string, payload: unknown): void {
    const at = this.#clock.now() + this.#delayMs;
    const previous = this.#queue.at(-1);
    this.#queue.push({ at, subject, payload });
    // A message still on its way for the same instant has a timer that takes this one too.
    if (previous?.at === at && this.#queue.length - 2 >= this.#head) return;
    // No abort signal: a long delay keeps thousands of instants in flight, each would hold a listener.
    void this.#clock.sleep(this.#delayMs).then(() => this.#flush());
  }

  #flush(): void {
    const now = this.#clock.now();
    while (this.#head < this.#queue.length && (this.#queue[this.#head] as Pending).at <= now) {
      const { subject, payload } = this.#queue[this.#head++] as Pending;
      this.#deliver(subject, payload);
    }
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
    }
  }
}

/**
 * An event plane whose messages take a modelled time to arrive, on the replay's clock: KV events
 * and load reports reach the router `delayMs(subject)` after a worker publishes them, in publish
 * order, as over a broker. A delay of 0 leaves delivery to the inner plane (after the publisher's
 * turn, at the same instant). Subscriptions are the inner plane's.
 */
export class DelayedEventPlane implements EventPlane {
  readonly #inner: EventPlane;
  readonly #clock: Clock;
  readonly #delayMs: (subject: string) => number;
  readonly #lines = new Map<number, DelayLine>();
  #closed = false;

  constructor(inner: EventPlane, clock: Clock, delayMs: (subject: string) => number) {
    this.#inner = inner;
    this.#clock = clock;
    this.#delayMs = delayMs;
  }

  async publish(subject: string, payload: unknown): Promise<void> {
    if (this.#closed) return;
    const delay = this.#delayMs(subject);
    if (delay <= 0) return this.#inner.publish(subject, payload);
    let line = this.#lines.get(delay);
    if (!line) {
      line = new DelayLine(delay, this.#clock, (s, p) => {
        if (!this.#closed) void this.#inner.publish(s, p);
      });
      this.#lines.set(delay, line);
    }
    line.push(subject, payload);
  }

  subscribe(subject: string, handler: (payload: unknown, subject: string) => void): Unsubscribe {
    return this.#inner.subscribe(subject, handler);
  }

  /** Drops what is still on its way and closes the inner plane. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#inner.close();
  }
}
