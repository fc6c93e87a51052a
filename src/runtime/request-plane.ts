import type { Delivery, StreamSink } from "./stream-sink.js";

/** Context a handler gets with each request. */
export interface RequestContext {
  /** Aborted when the caller cancels or goes away. */
  readonly signal: AbortSignal;
  /**
   * Says the handler is making progress without producing an item yet (an engine reporting a
   * long prefill chunk by chunk). Bindings that judge a worker's liveness by its progress count
   * it like an item; absent where liveness is not judged (in one process).
   */
  readonly reportProgress?: () => void;
}

/** Serves one address: takes a payload, streams responses back. */
export type RequestHandler = (payload: unknown, context: RequestContext) => AsyncIterable<unknown>;

export interface Registration {
  /** Stops accepting new calls at this address; calls in flight continue. */
  close(): Promise<void>;
}

/**
 * Calls from the frontend and router to workers, with a streamed reply and cancellation.
 * Embedded: a direct async call. Distributed: NATS request + streamed reply subjects.
 */
export interface RequestPlane {
  serve(address: string, handler: RequestHandler): Promise<Registration>;
  /**
   * Calls the handler at `address`. The stream ends when the handler's does; aborting `signal`
   * cancels the handler. Throws `WORKER_UNAVAILABLE` when nothing serves the address.
   */
  call(address: string, payload: unknown, options?: { signal?: AbortSignal }): AsyncIterable<unknown>;
  /**
   * Calls the handler at `address` as `call` does, delivering its responses into `sink` as they
   * arrive (in one process, in the turn the handler produced them); `stop()` on the delivery
   * cancels the handler as leaving `call`'s stream early does. `WORKER_UNAVAILABLE` goes to
   * `sink.fail`.
   */
  open(address: string, payload: unknown, sink: StreamSink<unknown>, options?: { signal?: AbortSignal }): Delivery;
  close(): Promise<void>;
}
