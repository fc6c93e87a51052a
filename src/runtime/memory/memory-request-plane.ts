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
    return {
      async *[Symbol.asyncIterator]() {
        const handler = handlers.get(address);
        if (!handler) {
          throw new ArmatureError("WORKER_UNAVAILABLE", `no worker serves ${address}`, { retryable: true });
        }
        const controller = new AbortController();
        const onAbort = (): void => controller.abort(options.signal?.reason);
        if (options.signal?.aborted) onAbort();
        options.signal?.addEventListener("abort", onAbort, { once: true });
        const iterator = handler(payload, { signal: controller.signal })[Symbol.asyncIterator]();
        let finished = false;
        try {
          for (;;) {
            if (options.signal?.aborted) throw options.signal.reason;
            const next = await iterator.next();
            if (next.done) {
              finished = true;
              return;
            }
            yield next.value;
          }
        } finally {
          options.signal?.removeEventListener("abort", onAbort);
          if (!finished) {
            // The consumer stopped early (break, return, throw or abort): cancel the handler's work
            // before unwinding it, so its cleanup sees the cancellation.
            if (!controller.signal.aborted) {
              controller.abort(new ArmatureError("REQUEST_CANCELLED", "caller stopped reading"));
            }
            await iterator.return?.();
          }
        }
      },
    };
  }

  async close(): Promise<void> {
    this.#handlers.clear();
  }
}
