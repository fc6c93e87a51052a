import { ArmatureError } from "../../protocol/index.js";
import type { StreamMessage } from "./call-wire.js";

/**
 * The caller's side of one call's stream. Items wait here until the consumer pulls them, and there
 * are never more than the credit the caller granted (plus `end`/`error`): a handler that sends
 * more breaks the stream. Heartbeats are not queued; they only update what the caller knows of
 * the handler's liveness:
 * - `heardAt`: when anything last arrived (a dead worker goes silent);
 * - `progressAt`: when the handler last produced something, reported progress, or said it waits
 *   for credit (a wedged engine behind a live heartbeat timer makes no progress).
 */
export class CallInbox {
  readonly #queue: StreamMessage[] = [];
  readonly #maxQueued: number;
  #wake: (() => void) | undefined;
  #interrupted: { reason: unknown } | undefined;
  #progressCount = 0;
  heardAt: number;
  progressAt: number;

  constructor(maxQueuedItems: number, now: number) {
    this.#maxQueued = maxQueuedItems;
    this.heardAt = now;
    this.progressAt = now;
  }

  push(message: StreamMessage, now: number): void {
    this.heardAt = now;
    if (message.t === "ping") {
      const count = message.p ?? this.#progressCount + 1;
      if (count !== this.#progressCount || message.w === "credit") this.progressAt = now;
      this.#progressCount = count;
      return;
    }
    this.progressAt = now;
    if (message.t === "item" && this.#queue.length >= this.#maxQueued) {
      this.interrupt(
        new ArmatureError("WORKER_UNAVAILABLE", `the worker sent more than the ${this.#maxQueued} items it was granted`, {
          retryable: true,
        }),
      );
      return;
    }
    this.#queue.push(message);
    this.#wake?.();
  }

  interrupt(reason: unknown): void {
    this.#interrupted ??= { reason };
    this.#wake?.();
  }

  /** The next message; `undefined` when none came within `timeoutMs`; throws once interrupted. */
  async next(timeoutMs: number): Promise<StreamMessage | undefined> {
    if (this.#interrupted) throw this.#interrupted.reason;
    const ready = this.#queue.shift();
    if (ready) return ready;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, timeoutMs));
      this.#wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.#wake = undefined;
    const interrupted = this.#interrupted as { reason: unknown } | undefined;
    if (interrupted) throw interrupted.reason;
    return this.#queue.shift();
  }
}
