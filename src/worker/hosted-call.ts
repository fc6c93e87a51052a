import type { GenerateResponse } from "../protocol/index.js";
import { type Delivery, deliver, type StreamSink } from "../runtime/index.js";

/** What a worker host is told about one call it serves. */
export interface HostedCallHooks {
  /** The call's `request-end` exists: it no longer counts as in flight (even if the caller never reads on). */
  ended(call: HostedCall): void;
  /** The engine's stream ended, failed or was stopped (its deadline timer cleared). Called once. */
  finished(call: HostedCall): void;
}

/**
 * One generate call on a worker: the engine's responses delivered into the caller's sink as the
 * engine yields them (one pump, no promise per layer), with the host told when the request ended
 * and when its stream is done. A class, not closures: it is made for every request.
 */
export class HostedCall implements StreamSink<GenerateResponse>, Delivery {
  readonly #down: StreamSink<unknown>;
  readonly #hooks: HostedCallHooks;
  readonly #clearDeadline: () => void;
  #delivery: Delivery | undefined;
  #ended = false;
  #finished = false;

  /** `clearDeadline` drops the call's deadline timer once its stream is done. */
  constructor(down: StreamSink<unknown>, hooks: HostedCallHooks, clearDeadline: () => void) {
    this.#down = down;
    this.#hooks = hooks;
    this.#clearDeadline = clearDeadline;
  }

  /** Starts delivering `responses` (once). */
  start(responses: AsyncIterable<GenerateResponse>): void {
    this.#delivery = deliver(responses, this);
  }

  get holding(): Promise<void> | undefined {
    return this.#down.holding;
  }

  push(response: GenerateResponse): void {
    if (response.type === "request-end" && !this.#ended) {
      this.#ended = true;
      this.#hooks.ended(this);
    }
    this.#down.push(response);
  }

  end(): void {
    this.finish();
    this.#down.end();
  }

  fail(error: unknown): void {
    this.finish();
    this.#down.fail(error);
  }

  async stop(): Promise<void> {
    await this.#delivery?.stop();
    this.finish();
  }

  /** Tells the host the call is done (once); also when it never started (its engine refused it). */
  finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#clearDeadline();
    if (!this.#ended) {
      this.#ended = true;
      this.#hooks.ended(this);
    }
    this.#hooks.finished(this);
  }
}
