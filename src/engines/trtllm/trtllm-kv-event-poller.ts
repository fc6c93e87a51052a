import type { KvEvent } from "../../protocol/index.js";
import { EventBatchError } from "../zmq-kv-events/event-batch-decoder.js";
import { decodeTrtllmEvents } from "./trtllm-kv-events.js";

export interface TrtllmKvEventPollerOptions {
  /** The pull route, e.g. `http://10.0.0.7:8000/kv_cache_events` (`--kv-events-endpoint`). */
  readonly url: string;
  /** The router's block size: events of another size are a loud error. */
  readonly blockSize: number;
  /** Pause between two reads (default 100 ms). */
  readonly intervalMs?: number | undefined;
  /** Events in the order the engine's cache changed them. */
  onEvents(events: KvEvent[]): void;
  /** An answer, or events, left out (malformed, a gap in the ids, an update not read): counted by the caller. */
  onDropped(reason: string): void;
  /** A configuration error that makes every event useless (the block size): said loudly, once. */
  onFatal(message: string): void;
}

/**
 * Reads TensorRT-LLM's KV events from its pull route (`POST /kv_cache_events`, served when its
 * `kv_cache_config` has `event_buffer_max_size` > 0), which answers the events buffered since the
 * last read and forgets them: this worker must be the route's only reader. The ids are checked: a
 * gap is what the server's buffer dropped, counted (there is no replay); a `created` event (the
 * engine started again) clears what is known of it. Nothing the server answers can throw here.
 */
export class TrtllmKvEventPoller {
  readonly #o: TrtllmKvEventPollerOptions;
  readonly #stop = new AbortController();
  #lastId: number | undefined;
  #fatal = false;
  #loop: Promise<void> | undefined;

  constructor(options: TrtllmKvEventPollerOptions) {
    this.#o = options;
  }

  start(): void {
    this.#loop = this.#run();
  }

  async close(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const interval = this.#o.intervalMs ?? 100;
    while (!this.#stop.signal.aborted) {
      await this.poll();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, interval);
        this.#stop.signal.addEventListener(
          "abort",
          () => {
            clearTimeout(timer);
            resolve();
          },
          { once: true },
        );
      });
    }
  }

  /** One read of the route (exposed for tests of the id checks). */
  async poll(): Promise<void> {
    let text: string;
    try {
      const response = await fetch(this.#o.url, {
        method: "POST",
        signal: AbortSignal.any([this.#stop.signal, AbortSignal.timeout(5000)]),
      });
      text = await response.text();
      if (!response.ok) {
        this.#o.onDropped(`POST ${this.#o.url} answered ${response.status}: ${text.slice(0, 120)}`);
        return;
      }
    } catch (error) {
      if (!this.#stop.signal.aborted) this.#o.onDropped(`POST ${this.#o.url} failed: ${(error as Error).message}`);
      return;
    }
    this.handle(text);
  }

  /** One answer's text. */
  handle(text: string): void {
    if (this.#fatal) return;
    let list: ReturnType<typeof decodeTrtllmEvents>;
    try {
      list = decodeTrtllmEvents(text, this.#o.blockSize);
    } catch (error) {
      if (error instanceof EventBatchError && error.kind === "block-size") {
        this.#fatal = true;
        this.#o.onFatal(`KV events: ${error.message}; its events are ignored until the worker restarts`);
      } else {
        this.#o.onDropped(`an answer that cannot be read: ${(error as Error).message}`);
      }
      return;
    }
    const first = list.ids[0];
    if (first !== undefined && this.#lastId !== undefined && first > this.#lastId + 1) {
      this.#o.onDropped(`events ${this.#lastId + 1} to ${first - 1} were dropped by the server's buffer (event_buffer_max_size)`);
    }
    if (list.ids.length > 0) this.#lastId = list.ids[list.ids.length - 1];
    for (const reason of list.skipped) this.#o.onDropped(reason);
    if (list.events.length > 0) this.#o.onEvents(list.events);
  }
}
