import type { NatsConnection } from "@nats-io/transport-node";
import { ArmatureError } from "../../protocol/index.js";
import type { RequestHandler } from "../request-plane.js";
import { decodeMessage } from "../wire-codec.js";
import { type CallStart, type CreditGrant, errorMessageOf, type StreamMessage } from "./call-wire.js";
import { publishFramed } from "./stream-framing.js";

/**
 * Runs one call on the handler's side: pulls the handler's items only while the caller has granted
 * credit (so a slow caller pauses the handler instead of filling its own memory), and sends a
 * heartbeat every `heartbeatMs` that says how much the handler has produced, so the caller can
 * tell a worker that works from one whose timer runs while its engine is wedged. A caller that
 * grants no credit for `creditTimeoutMs` (gone, or hostile) cancels the call: a handler never waits
 * for it forever, holding its engine's sequence.
 */
export async function runHandler(
  nc: NatsConnection,
  handler: RequestHandler,
  start: CallStart,
  heartbeatMs: number,
  creditTimeoutMs: number,
): Promise<void> {
  const controller = new AbortController();
  let credit = start.window ?? Number.POSITIVE_INFINITY;
  let creditArrived: (() => void) | undefined;
  const control = nc.subscribe(start.cancel, {
    callback: (_error, msg) => {
      const grant = msg.data.length > 0 ? (safeDecode(msg.data) as CreditGrant | undefined) : undefined;
      if (grant?.t === "credit" && Number.isFinite(grant.n) && grant.n > 0) {
        credit += grant.n;
        creditArrived?.();
        return;
      }
      controller.abort(new ArmatureError("REQUEST_CANCELLED", "caller cancelled"));
      creditArrived?.();
    },
  });
  // A closed connection (the process is going away) ends the call quietly: the caller's idle
  // timeout turns the silence into a retryable error on its side.
  const send = (message: StreamMessage): void => {
    if (!nc.isClosed()) publishFramed(nc, start.stream, message);
  };
  let progress = 0;
  let waitingForCredit = false;
  const heartbeat = setInterval(() => {
    try {
      send({ t: "ping", p: progress, ...(waitingForCredit ? { w: "credit" } : {}) });
    } catch {
      // A draining connection refuses publishes; a throw here would escape the timer.
    }
  }, heartbeatMs);
  const iterator = handler(start.payload, { signal: controller.signal, reportProgress: () => void progress++ })[
    Symbol.asyncIterator
  ]();
  let done = false;
  let starvedBy: ArmatureError | undefined;
  try {
    for (;;) {
      if (credit <= 0 && !controller.signal.aborted) {
        waitingForCredit = true;
        const starved = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(true), creditTimeoutMs);
          creditArrived = () => {
            clearTimeout(timer);
            resolve(false);
          };
        });
        creditArrived = undefined;
        if (starved && credit <= 0) {
          starvedBy = new ArmatureError(
            "REQUEST_CANCELLED",
            `the caller read nothing for ${creditTimeoutMs} ms; the worker gave the call up`,
          );
          controller.abort(starvedBy);
        }
        waitingForCredit = false;
        continue;
      }
      if (nc.isClosed() && !controller.signal.aborted) {
        // Nobody can hear the rest: stop the work.
        controller.abort(new ArmatureError("WORKER_UNAVAILABLE", "connection to NATS closed", { retryable: true }));
      }
      if (controller.signal.aborted) break;
      const next = await iterator.next();
      if (next.done) {
        done = true;
        break;
      }
      progress++;
      credit--;
      if (!controller.signal.aborted) send({ t: "item", v: next.value });
    }
    if (!done) await iterator.return?.();
    send(starvedBy ? errorMessageOf(starvedBy) : { t: "end" });
  } catch (error) {
    send(errorMessageOf(error));
  } finally {
    clearInterval(heartbeat);
    control.unsubscribe();
  }
}

function safeDecode(bytes: Uint8Array): unknown {
  try {
    return decodeMessage(bytes);
  } catch {
    return undefined;
  }
}
