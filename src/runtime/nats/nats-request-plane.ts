import { createInbox, type NatsConnection, RequestError } from "@nats-io/transport-node";
import { ArmatureError, type ErrorCode, isArmatureError } from "../../protocol/index.js";
import type { Registration, RequestHandler, RequestPlane } from "../request-plane.js";
import { decodeMessage, encodeMessage } from "../wire-codec.js";

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
  | { readonly t: "end" }
  | {
      readonly t: "error";
      readonly code: string;
      readonly message: string;
      readonly retryable: boolean;
      readonly param?: string;
    };

const subjectOf = (address: string): string => `armature.rpc.${address}`;

/**
 * Request plane on NATS: a call is a request to `armature.rpc.<address>` (answered at once, so a
 * missing worker is known immediately from NATS's no-responders), then a stream of messages on the
 * caller's inbox, ended by `end` or `error`; cancelling publishes on a cancel subject the handler
 * listens to. Workers of one address share a queue group.
 */
export class NatsRequestPlane implements RequestPlane {
  readonly #nc: NatsConnection;
  readonly #startTimeoutMs: number;
  readonly #registrations = new Set<Registration>();

  constructor(nc: NatsConnection, options: { startTimeoutMs?: number } = {}) {
    this.#nc = nc;
    this.#startTimeoutMs = options.startTimeoutMs ?? 5000;
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
        void this.#run(handler, start);
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
    const send = (message: StreamMessage): void => nc.publish(start.stream, encodeMessage(message));
    try {
      for await (const item of handler(start.payload, { signal: controller.signal })) {
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
      cancelSub.unsubscribe();
    }
  }

  call(address: string, payload: unknown, options: { signal?: AbortSignal } = {}): AsyncIterable<unknown> {
    const nc = this.#nc;
    const startTimeoutMs = this.#startTimeoutMs;
    return {
      async *[Symbol.asyncIterator]() {
        const stream = createInbox();
        const cancel = `${stream}.cancel`;
        const sub = nc.subscribe(stream);
        let finished = false;
        const onAbort = (): void => {
          if (!finished) nc.publish(cancel);
          sub.unsubscribe();
        };
        try {
          if (options.signal?.aborted) throw options.signal.reason;
          options.signal?.addEventListener("abort", onAbort, { once: true });
          try {
            await nc.request(subjectOf(address), encodeMessage({ payload, stream, cancel } satisfies CallStart), {
              timeout: startTimeoutMs,
            });
          } catch (error) {
            throw new ArmatureError(
              "WORKER_UNAVAILABLE",
              error instanceof RequestError && error.isNoResponders()
                ? `no worker serves ${address}`
                : `worker ${address} did not answer: ${(error as Error).message}`,
              { retryable: true, cause: error },
            );
          }
          for await (const msg of sub) {
            const message = decodeMessage(msg.data) as StreamMessage;
            if (message.t === "item") yield message.v;
            else if (message.t === "end") {
              finished = true;
              return;
            } else {
              finished = true;
              throw new ArmatureError(message.code as ErrorCode, message.message, {
                retryable: message.retryable,
                param: message.param,
              });
            }
          }
          // The subscription closed without an end: the caller aborted.
          if (options.signal?.aborted) throw options.signal.reason;
          throw new ArmatureError("WORKER_UNAVAILABLE", `the stream from ${address} closed before it ended`, { retryable: true });
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
