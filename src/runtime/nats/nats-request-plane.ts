import { createInbox, type NatsConnection, RequestError } from "@nats-io/transport-node";
import { ArmatureError, type ErrorCode, isArmatureError } from "../../protocol/index.js";
import type { Registration, RequestHandler, RequestPlane } from "../request-plane.js";
import { decodeMessage, encodeMessage } from "../wire-codec.js";
import { FrameAssembler, maxPayloadOf, publishFramed } from "./stream-framing.js";

/** What the caller sends to start a call. */
interface CallStart {
  readonly payload: unknown;
  /** Where the handler streams its responses. */
  readonly stream: string;
  /** Where the caller says "stop". */
  readonly cancel: string;
}

/** What flows back on the stream subject. */
type StreamMessage =
  | { readonly t: "item"; readonly v: unknown }
  | { readonly t: "ping" }
  | { readonly t: "end" }
  | {
      readonly t: "error";
      readonly code: string;
      readonly message: string;
      readonly retryable: boolean;
      readonly param?: string;
    };

/** Timings of the NATS request plane; every field has a default. */
export interface NatsRequestPlaneOptions {
  readonly startTimeoutMs?: number;
  readonly heartbeatMs?: number;
  readonly idleTimeoutMs?: number;
  /** The largest single response a caller reassembles from parts (default 256 MiB). */
  readonly maxResponseBytes?: number;
}

const subjectOf = (address: string): string => `armature.rpc.${address}`;

/**
 * Request plane on NATS: a call is a request to `armature.rpc.<address>` (answered at once, so a
 * missing worker is known immediately from NATS's no-responders), then a stream of messages on the
 * caller's inbox, ended by `end` or `error`; cancelling publishes on a cancel subject the handler
 * listens to. Workers of one address share a queue group. A stream message larger than the
 * server's max_payload (a KV dump) travels in parts that the caller puts back together.
 */
export class NatsRequestPlane implements RequestPlane {
  readonly #nc: NatsConnection;
  readonly #startTimeoutMs: number;
  readonly #heartbeatMs: number;
  readonly #idleTimeoutMs: number;
  readonly #maxResponseBytes: number;
  readonly #registrations = new Set<Registration>();

  /**
   * Handlers send a heartbeat every `heartbeatMs` (default 1 s) while they work; a caller that hears
   * nothing for `idleTimeoutMs` (default 5 s) gives up with a retryable `WORKER_UNAVAILABLE`, so a
   * worker that dies mid-stream never leaves its caller hanging.
   */
  constructor(nc: NatsConnection, options: NatsRequestPlaneOptions = {}) {
    this.#nc = nc;
    this.#startTimeoutMs = options.startTimeoutMs ?? 5000;
    this.#heartbeatMs = options.heartbeatMs ?? 1000;
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 5000;
    this.#maxResponseBytes = options.maxResponseBytes ?? 256 * 1024 * 1024;
  }

  async serve(address: string, handler: RequestHandler): Promise<Registration> {
    const nc = this.#nc;
    const sub = nc.subscribe(subjectOf(address), {
      queue: "armature",
      callback: (error, msg) => {
        if (error) return;
        let start: CallStart;
        try {
          start = decodeMessage(msg.data) as CallStart;
        } catch {
          return;
        }
        msg.respond(encodeMessage({ accepted: true }));
        this.#run(handler, start).catch(() => {});
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

  async #run(handler: RequestHandler, start: CallStart): Promise<void> {
    const nc = this.#nc;
    const controller = new AbortController();
    const cancelSub = nc.subscribe(start.cancel, {
      max: 1,
      callback: () => controller.abort(new ArmatureError("REQUEST_CANCELLED", "caller cancelled")),
    });
    // A closed connection (the process is going away) ends the call quietly: the caller's idle
    // timeout turns the silence into a retryable error on its side.
    const send = (message: StreamMessage): void => {
      if (!nc.isClosed()) publishFramed(nc, start.stream, message);
    };
    const heartbeat = setInterval(() => send({ t: "ping" }), this.#heartbeatMs);
    try {
      for await (const item of handler(start.payload, { signal: controller.signal })) {
        if (nc.isClosed() && !controller.signal.aborted) {
          // Nobody can hear the rest: stop the work.
          controller.abort(new ArmatureError("WORKER_UNAVAILABLE", "connection to NATS closed", { retryable: true }));
        }
        if (controller.signal.aborted) break;
        send({ t: "item", v: item });
      }
      send({ t: "end" });
    } catch (error) {
      send(
        isArmatureError(error)
          ? {
              t: "error",
              code: error.code,
              message: error.message,
              retryable: error.retryable,
              ...(error.param ? { param: error.param } : {}),
            }
          : { t: "error", code: "ENGINE_FAILED", message: String((error as Error)?.message ?? error), retryable: false },
      );
    } finally {
      clearInterval(heartbeat);
      cancelSub.unsubscribe();
    }
  }

  call(address: string, payload: unknown, options: { signal?: AbortSignal } = {}): AsyncIterable<unknown> {
    const nc = this.#nc;
    const startTimeoutMs = this.#startTimeoutMs;
    const idleTimeoutMs = this.#idleTimeoutMs;
    const maxResponseBytes = this.#maxResponseBytes;
    return {
      async *[Symbol.asyncIterator]() {
        const stream = createInbox();
        const cancel = `${stream}.cancel`;
        const start = encodeMessage({ payload, stream, cancel } satisfies CallStart);
        checkRequestSize(nc, address, start.length);
        const inbox = new Inbox();
        const assembler = new FrameAssembler(maxResponseBytes);
        const sub = nc.subscribe(stream, {
          callback: (_error, msg) => {
            try {
              const message = assembler.accept(msg) as StreamMessage | undefined;
              if (message) inbox.push(message);
            } catch (error) {
              inbox.interrupt(error);
            }
          },
        });
        let finished = false;
        const onAbort = (): void => inbox.interrupt(options.signal?.reason);
        try {
          if (options.signal?.aborted) throw options.signal.reason;
          options.signal?.addEventListener("abort", onAbort, { once: true });
          try {
            await nc.request(subjectOf(address), start, { timeout: startTimeoutMs });
          } catch (error) {
            throw new ArmatureError(
              "WORKER_UNAVAILABLE",
              error instanceof RequestError && error.isNoResponders()
                ? `no worker serves ${address}`
                : `worker ${address} did not answer: ${(error as Error).message}`,
              { retryable: true, cause: error },
            );
          }
          for (;;) {
            const message = await inbox.next(idleTimeoutMs);
            if (message === undefined) {
              throw new ArmatureError("WORKER_UNAVAILABLE", `worker ${address} stopped answering for ${idleTimeoutMs} ms`, {
                retryable: true,
              });
            }
            if (message.t === "ping") continue;
            if (message.t === "item") {
              yield message.v;
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
          if (!finished) nc.publish(cancel);
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

/** Messages of one call's stream, waited for with an idle timeout or interrupted by an abort. */
class Inbox {
  readonly #queue: StreamMessage[] = [];
  #wake: (() => void) | undefined;
  #interrupted: { reason: unknown } | undefined;

  push(message: StreamMessage): void {
    this.#queue.push(message);
    this.#wake?.();
  }

  interrupt(reason: unknown): void {
    this.#interrupted = { reason };
    this.#wake?.();
  }

  /** The next message; `undefined` when none came within `timeoutMs`; throws once interrupted. */
  async next(timeoutMs: number): Promise<StreamMessage | undefined> {
    if (this.#interrupted) throw this.#interrupted.reason;
    const ready = this.#queue.shift();
    if (ready) return ready;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
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
