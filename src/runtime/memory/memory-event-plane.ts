import type { Unsubscribe } from "../discovery.js";
import { type EventPlane, subjectMatches } from "../event-plane.js";

interface Subscription {
  readonly pattern: string;
  readonly handler: (payload: unknown, subject: string) => void;
}

/**
 * In-process pub/sub. Delivery is asynchronous (after the publisher's turn) and in publish order,
 * like a real broker; a throwing handler is reported to `onHandlerError` and does not stop others.
 */
export class MemoryEventPlane implements EventPlane {
  readonly #subscriptions = new Set<Subscription>();
  /** The subscriptions each subject published so far matches; cleared when subscriptions change. */
  readonly #targets = new Map<string, Subscription[]>();
  readonly #onHandlerError: (error: unknown, subject: string) => void;

  constructor(options: { onHandlerError?: (error: unknown, subject: string) => void } = {}) {
    this.#onHandlerError = options.onHandlerError ?? (() => {});
  }

  async publish(subject: string, payload: unknown): Promise<void> {
    let targets = this.#targets.get(subject);
    if (!targets) {
      targets = [...this.#subscriptions].filter((s) => subjectMatches(s.pattern, subject));
      this.#targets.set(subject, targets);
    }
    if (targets.length === 0) return;
    const matched = targets;
    queueMicrotask(() => {
      for (const sub of matched) {
        if (!this.#subscriptions.has(sub)) continue;
        try {
          sub.handler(payload, subject);
        } catch (error) {
          this.#onHandlerError(error, subject);
        }
      }
    });
  }

  subscribe(subject: string, handler: (payload: unknown, subject: string) => void): Unsubscribe {
    const sub: Subscription = { pattern: subject, handler };
    this.#subscriptions.add(sub);
    this.#targets.clear();
    return () => {
      this.#subscriptions.delete(sub);
      this.#targets.clear();
    };
  }

  async close(): Promise<void> {
    this.#subscriptions.clear();
    this.#targets.clear();
  }
}
