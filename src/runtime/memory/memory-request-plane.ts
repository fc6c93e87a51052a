import { ArmatureError } from "../../protocol/index.js";
import type { Registration, RequestHandler, RequestPlane } from "../request-plane.js";
import { type Delivery, deliver, type StreamSink } from "../stream-sink.js";

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

  open(address: string, payload: unknown, sink: StreamSink<unknown>, options: { signal?: AbortSignal } = {}): Delivery {
    return new InProcessDelivery(this.#handlers.get(address), address, payload, sink, options.signal);
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
      const cancel = (reason: unknown): void => this.#controller.abort(reason);
      this.#iterator = handler(this.#payload, { signal: this.#controller.signal, cancel })[Symbol.asyncIterator]();
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

/**
 * One call delivered into the caller's sink: the handler starts at once, its responses are pushed
 * as it yields them, and a caller that stops early (`stop()`) or aborts its signal cancels the
 * handler's signal before the handler unwinds; an abort fails the sink with its reason.
 */
class InProcessDelivery implements Delivery, StreamSink<unknown> {
  readonly #sink: StreamSink<unknown>;
  readonly #callerSignal: AbortSignal | undefined;
  readonly #controller = new AbortController();
  #pump: Delivery | undefined;
  #closed = false;

  constructor(
    handler: RequestHandler | undefined,
    address: string,
    payload: unknown,
    sink: StreamSink<unknown>,
    signal: AbortSignal | undefined,
  ) {
    this.#sink = sink;
    this.#callerSignal = signal;
    if (!handler) {
      this.#closed = true;
      const missing = new ArmatureError("WORKER_UNAVAILABLE", `no worker serves ${address}`, { retryable: true });
      queueMicrotask(() => sink.fail(missing));
      return;
    }
    if (signal?.aborted) {
      this.#closed = true;
      queueMicrotask(() => sink.fail(signal.reason));
      return;
    }
    signal?.addEventListener("abort", this, { once: true });
    const context = { signal: this.#controller.signal, cancel: this.#cancelFromHandler };
    if (!handler.deliver) {
      this.#pump = deliver(handler(payload, context), this);
      return;
    }
    try {
      this.#pump = handler.deliver(payload, context, this);
    } catch (error) {
      // Refused before it started: the caller hears it as it hears any failure, after open returns.
      this.#release();
      queueMicrotask(() => sink.fail(error));
    }
  }

  get holding(): Promise<void> | undefined {
    return this.#sink.holding;
  }

  /** The handler's own deadline passed: its signal aborts; what it still yields is delivered. */
  readonly #cancelFromHandler = (reason: unknown): void => {
    this.#controller.abort(reason);
  };

  /** A throw here (the caller refused the item) stops the pump: the handler is cancelled first. */
  push(item: unknown): void {
    try {
      this.#sink.push(item);
    } catch (error) {
      this.#release();
      this.#controller.abort(new ArmatureError("REQUEST_CANCELLED", "caller refused a response"));
      throw error;
    }
  }

  end(): void {
    this.#release();
    this.#sink.end();
  }

  fail(error: unknown): void {
    this.#release();
    this.#sink.fail(error);
  }

  async stop(): Promise<void> {
    if (this.#closed) return;
    this.#release();
    this.#controller.abort(new ArmatureError("REQUEST_CANCELLED", "caller stopped reading"));
    await this.#pump?.stop();
  }

  /** The caller's signal aborted (this object is its listener: no closure per call). */
  handleEvent(): void {
    if (this.#closed) return;
    const reason = this.#callerSignal?.reason;
    this.#release();
    this.#controller.abort(reason);
    void this.#pump?.stop();
    this.#sink.fail(reason);
  }

  #release(): void {
    this.#closed = true;
    this.#callerSignal?.removeEventListener("abort", this);
  }
}
