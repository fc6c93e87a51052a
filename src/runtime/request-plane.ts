import { type Delivery, iterate, type StreamSink } from "./stream-sink.js";

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
  /**
   * Aborts `signal` with `reason` from the handler's side (the call's deadline passing on the
   * worker), so the handler needs no controller of its own. Offered by a binding whose call goes
   * on delivering what the handler yields after its signal aborted (in one process); absent where
   * an aborted call stops listening (over NATS the handler side ends the stream at once).
   */
  readonly cancel?: (reason: unknown) => void;
}

/**
 * Serves one address: takes a payload, streams responses back. A handler made by
 * `deliveringHandler` also delivers into a caller's sink itself (`deliver`): in one process its
 * responses then reach the caller with no iterator between them.
 */
export type RequestHandler = ((payload: unknown, context: RequestContext) => AsyncIterable<unknown>) & {
  readonly deliver?: DeliverResponses;
};

/**
 * Delivers one call's responses into the caller's sink; `stop()` unwinds the work. Called with
 * the call's context (its signal aborts when the caller cancels); may throw to refuse the call.
 */
export type DeliverResponses = (payload: unknown, context: RequestContext, sink: StreamSink<unknown>) => Delivery;

/** A handler that delivers into the caller's sink where the plane can (in one process), and streams elsewhere. */
export function deliveringHandler(deliverResponses: DeliverResponses): RequestHandler {
  const handler = (payload: unknown, context: RequestContext): AsyncIterable<unknown> =>
    iterate((sink) => deliverResponses(payload, context, sink));
  return Object.assign(handler, { deliver: deliverResponses });
}

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
