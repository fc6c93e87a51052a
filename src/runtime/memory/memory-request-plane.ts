import { ArmatureError } from "../../protocol/index.js";
import type { Registration, RequestHandler, RequestPlane } from "../request-plane.js";

/** Direct in-process calls: the handler's iterator is the caller's stream. */
export class MemoryRequestPlane implements RequestPlane {
  readonly #handlers = new Map<string, RequestHandler>();

  async serve(address: string, handler: RequestHandler): Promise<Registration> {
    if (this.#handlers.has(address)) {
      throw new ArmatureError("CONFIG_INVALID", `address ${address} is already served`);
    }
    this.#handlers.set(address, handler);
    return {
      close: async () => {
        if (this.#handlers.get(address) === handler) this.#handlers.delete(address);
      },
    };
  }

  call(address: string, payload: unknown, options: { signal?: AbortSignal } = {}): AsyncIterable<unknown> {
    const handlers = this.#handlers;
    return { [Symbol.asyncIterator]: () => new InProcessCall(handlers, address, payload, options.signal) };
  }

  async close(): Promise<void> {
    this.#handlers.clear();
  }
}

/**
 * One call's stream: the handler starts on the first `next()` (a missing handler is a retryable
 * `WORKER_UNAVAILABLE` there), each `next()` is the handler's own, and a caller that stops early
 * (`return()`) or aborts its signal cancels the handler's signal before the handler unwinds. A plain
 * iterator, not a generator: a token crosses this layer with one promise.
 */
class InProcessCall implements AsyncIterator<unknown> {
  readonly #handlers: ReadonlyMap<string, RequestHandler>;
  readonly #address: string;
  readonly #payload: unknown;
  readonly #callerSignal: AbortSignal | undefined;
  readonly #controller = new AbortController();
  #iterator: AsyncIterator<unknown> | undefined;
  #closed = false;

  constructor(handlers: ReadonlyMap<string, RequestHandler>, address: string, payload: unknown, signal: AbortSignal | undefined) {
    this.#handlers = handlers;
    this.#address = address;
    this.#payload = payload;
    this.#callerSignal = signal;
  }

  readonly #onCallerAbort = (): void => this.#controller.abort(this.#callerSignal?.reason);

  async next(): Promise<IteratorResult<unknown>> {
    if (this.#closed) return { done: true, value: undefined };
    const caller = this.#callerSignal;
    if (this.#iterator === undefined) {
      const handler = this.#handlers.get(this.#address);
      if (!handler) {
        this.#closed = true;
        throw new ArmatureError("WORKER_UNAVAILABLE", `no worker serves ${this.#address}`, { retryable: true });
      }
      if (caller?.aborted) this.#onCallerAbort();
      else caller?.addEventListener("abort", this.#onCallerAbort, { once: true });
      this.#iterator = handler(this.#payload, { signal: this.#controller.signal })[Symbol.asyncIterator]();
    }
    if (caller?.aborted) {
      await this.#cancel();
      throw caller.reason;
    }
    let next: IteratorResult<unknown>;
    try {
      next = await this.#iterator.next();
    } catch (error) {
      this.#release();
      throw error;
    }
    if (next.done) this.#release();
    return next;
  }

  async return(): Promise<IteratorResult<unknown>> {
    await this.#cancel();
    return { done: true, value: undefined };
  }

  #release(): void {
    this.#closed = true;
    this.#callerSignal?.removeEventListener("abort", this.#onCallerAbort);
  }

  /** The caller stopped early (break, return, throw or abort): cancel the handler, then unwind it. */
  async #cancel(): Promise<void> {
    if (this.#closed) return;
    this.#release();
    if (!this.#controller.signal.aborted) {
      this.#controller.abort(new ArmatureError("REQUEST_CANCELLED", "caller stopped reading"));
    }
    await this.#iterator?.return?.();
  }
}
