import { createInbox, type NatsConnection, RequestError } from "@nats-io/transport-node";
import { ArmatureError, type ErrorCode } from "../../protocol/index.js";
import type { Registration, RequestHandler, RequestPlane } from "../request-plane.js";
import { type Delivery, deliver, type StreamSink } from "../stream-sink.js";
import { decodeMessage, encodeMessage } from "../wire-codec.js";
import { CallInbox } from "./call-inbox.js";
import { type CallStart, type CreditGrant, parseCallStart, type StreamMessage } from "./call-wire.js";
import { runHandler } from "./handler-run.js";
import { FrameAssembler, maxPayloadOf } from "./stream-framing.js";

/** Timings and bounds of the NATS request plane; every field has a default. */
export interface NatsRequestPlaneOptions {
  /** How long a worker has to accept a call. Default 5 s. */
  readonly startTimeoutMs?: number;
  /** Handler side: how often a working handler says so. Default 1 s. */
  readonly heartbeatMs?: number;
  /** Caller side: silence (not even a heartbeat) after which the worker is taken for dead. Default 5 s. */
  readonly idleTimeoutMs?: number;
  /**
   * Caller side: how long a worker may send heartbeats without producing anything (no item, no
   * reported progress) before it is taken for wedged. Default 60 s: well above a prefill of tens of
   * thousands of tokens on a GPU, and any time a request waits in the engine's own queue counts
   * too; engines that report prefill progress (`RequestContext.reportProgress`) may run longer.
   */
  readonly progressTimeoutMs?: number;
  /**
   * A handler whose caller grants no credit (reads nothing) for this long gives the call up and
   * frees what it holds, so a vanished or hostile caller cannot pin a worker's sequence. Default 5 min.
   */
  readonly creditTimeoutMs?: number;
  /** Caller side: items a handler may send ahead of the consumer (the flow-control window). Default 64. */
  readonly window?: number;
  /** The largest single response a caller reassembles from parts. Default 256 MiB. */
  readonly maxResponseBytes?: number;
}

const subjectOf = (address: string): string => `armature.rpc.${address}`;

/**
 * Request plane on NATS: a call is a request to `armature.rpc.<address>` (answered at once, so a
 * missing worker is known immediately from NATS's no-responders), then a stream of messages on the
 * caller's inbox, ended by `end` or `error`; the caller cancels or grants credit on a control
 * subject the handler listens to. Workers of one address share a queue group. A stream message
 * larger than the server's max_payload (a KV dump) travels in parts that the caller reassembles.
 *
 * Flow control is credit-based: the caller grants `window` items at the start and grants more as
 * its consumer pulls them (half a window at a time), so a fast worker and a slow client pause the
 * handler rather than fill the caller's memory; the caller's queue never holds more than `window`
 * items. Liveness is judged by progress, not by a timer: heartbeats carry how much the handler has
 * produced, and a call whose worker keeps beating without progress for `progressTimeoutMs` (while
 * not paused by the caller's own credit) fails with a retryable `WORKER_UNAVAILABLE`, so the
 * frontend moves the request to another worker.
 */
export class NatsRequestPlane implements RequestPlane {
  readonly #nc: NatsConnection;
  readonly #o: Required<NatsRequestPlaneOptions>;
  readonly #registrations = new Set<Registration>();

  constructor(nc: NatsConnection, options: NatsRequestPlaneOptions = {}) {
    this.#nc = nc;
    this.#o = {
      startTimeoutMs: options.startTimeoutMs ?? 5000,
      heartbeatMs: options.heartbeatMs ?? 1000,
      idleTimeoutMs: options.idleTimeoutMs ?? 5000,
      progressTimeoutMs: options.progressTimeoutMs ?? 60_000,
      creditTimeoutMs: options.creditTimeoutMs ?? 300_000,
      window: Math.max(2, options.window ?? 64),
      maxResponseBytes: options.maxResponseBytes ?? 256 * 1024 * 1024,
    };
  }

  async serve(address: string, handler: RequestHandler): Promise<Registration> {
    const nc = this.#nc;
    const sub = nc.subscribe(subjectOf(address), {
      queue: "armature",
      callback: (error, msg) => {
        if (error) return;
        let start: CallStart | undefined;
        try {
          start = parseCallStart(decodeMessage(msg.data));
        } catch {
          return;
        }
        if (!start) return;
        msg.respond(encodeMessage({ accepted: true }));
        runHandler(nc, handler, start, this.#o.heartbeatMs, this.#o.creditTimeoutMs).catch(() => {});
      },
    });
    await nc.flush();
    const registration: Registration = {
      close: async () => {
        this.#registrations.delete(registration);
        if (!sub.isClosed()) await sub.drain();
      },
    };
    this.#registrations.add(registration);
    return registration;
  }

  /** The stream `call` reads, pumped into `sink` as each message is taken (credit is granted as today). */
  open(address: string, payload: unknown, sink: StreamSink<unknown>, options: { signal?: AbortSignal } = {}): Delivery {
    return deliver(this.call(address, payload, options), sink);
  }

  call(address: string, payload: unknown, options: { signal?: AbortSignal } = {}): AsyncIterable<unknown> {
    const nc = this.#nc;
    const o = this.#o;
    return {
      async *[Symbol.asyncIterator]() {
        const stream = createInbox();
        const cancel = `${stream}.cancel`;
        const start = encodeMessage({ payload, stream, cancel, window: o.window } satisfies CallStart);
        checkRequestSize(nc, address, start.length);
        const inbox = new CallInbox(o.window, Date.now());
        const assembler = new FrameAssembler(o.maxResponseBytes);
        const sub = nc.subscribe(stream, {
          callback: (_error, msg) => {
            try {
              const message = assembler.accept(msg) as StreamMessage | undefined;
              if (message) inbox.push(message, Date.now());
            } catch (error) {
              inbox.interrupt(error);
            }
          },
        });
        let finished = false;
        let consumedSinceGrant = 0;
        const onAbort = (): void => inbox.interrupt(options.signal?.reason);
        try {
          if (options.signal?.aborted) throw options.signal.reason;
          options.signal?.addEventListener("abort", onAbort, { once: true });
          try {
            await nc.request(subjectOf(address), start, { timeout: o.startTimeoutMs });
          } catch (error) {
            throw new ArmatureError(
              "WORKER_UNAVAILABLE",
              error instanceof RequestError && error.isNoResponders()
                ? `no worker serves ${address}`
                : `worker ${address} did not answer: ${(error as Error).message}`,
              { retryable: true, cause: error },
            );
          }
          inbox.heardAt = inbox.progressAt = Date.now();
          for (;;) {
            const now = Date.now();
            const silentFor = now - inbox.heardAt;
            const stalledFor = now - inbox.progressAt;
            if (silentFor >= o.idleTimeoutMs) {
              throw new ArmatureError("WORKER_UNAVAILABLE", `worker ${address} stopped answering for ${o.idleTimeoutMs} ms`, {
                retryable: true,
              });
            }
            if (stalledFor >= o.progressTimeoutMs) {
              throw new ArmatureError(
                "WORKER_UNAVAILABLE",
                `worker ${address} produced nothing for ${o.progressTimeoutMs} ms while saying it is working (a stuck engine?); the limit is --progress-timeout-ms`,
                { retryable: true },
              );
            }
            const message = await inbox.next(Math.min(o.idleTimeoutMs - silentFor, o.progressTimeoutMs - stalledFor));
            if (message === undefined || message.t === "ping") continue;
            if (message.t === "item") {
              yield message.v;
              if (++consumedSinceGrant >= o.window / 2 && !nc.isClosed()) {
                nc.publish(cancel, encodeMessage({ t: "credit", n: consumedSinceGrant } satisfies CreditGrant));
                consumedSinceGrant = 0;
              }
              continue;
            }
            finished = true;
            if (message.t === "end") return;
            throw new ArmatureError(message.code as ErrorCode, message.message, {
              retryable: message.retryable,
              param: message.param,
            });
          }
        } finally {
          options.signal?.removeEventListener("abort", onAbort);
          if (!finished && !nc.isClosed()) nc.publish(cancel);
          sub.unsubscribe();
        }
      },
    };
  }

  /** Stops serving every address this plane serves (calls in flight finish). */
  async close(): Promise<void> {
    await Promise.all([...this.#registrations].map((r) => r.close()));
  }
}

/**
 * A request larger than the server's max_payload cannot be sent at all, to any worker: fail once,
 * not retryably (a retry or a migration would hit the same limit), saying which setting to raise.
 */
function checkRequestSize(nc: NatsConnection, address: string, bytes: number): void {
  const limit = maxPayloadOf(nc);
  if (bytes <= limit) return;
  throw new ArmatureError(
    "REQUEST_TOO_LARGE",
    `the request for ${address} is ${bytes} bytes encoded, over the message bus's limit of ${limit} bytes: shorten the prompt, or raise max_payload in nats-server's configuration (and restart it)`,
    { retryable: false },
  );
}
