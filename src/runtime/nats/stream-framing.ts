import { headers, type Msg, type NatsConnection } from "@nats-io/transport-node";
import { ArmatureError } from "../../protocol/index.js";
import { decodeMessage, encodeMessage } from "../wire-codec.js";

/** Marks one part of a message split to fit the server's max_payload: `INDEX/COUNT`, from 1. */
export const PART_HEADER = "Armature-Part";

/** Room left under max_payload for the part header (`NATS/1.0`, the header line, CRLFs). */
const HEADER_ROOM = 256;

/** nats-server's default max_payload, for a connection that has not yet heard the server's INFO. */
const DEFAULT_MAX_PAYLOAD = 1024 * 1024;

/** The largest message the server takes, as it announced on connect. */
export function maxPayloadOf(nc: NatsConnection): number {
  return nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
}

/**
 * Publishes `message`, split into parts under the server's max_payload when its encoding is larger
 * (a KV dump of a full cache is megabytes; nats-server refuses anything over 1 MiB by default).
 * Parts carry `Armature-Part: i/n` and the raw bytes of one slice; NATS keeps one publisher's
 * messages on one subject in order, so the receiver appends them as they come.
 */
export function publishFramed(nc: NatsConnection, subject: string, message: unknown): void {
  const bytes = encodeMessage(message);
  const limit = Math.max(1024, maxPayloadOf(nc) - HEADER_ROOM);
  if (bytes.length <= limit) {
    nc.publish(subject, bytes);
    return;
  }
  const count = Math.ceil(bytes.length / limit);
  for (let i = 0; i < count; i++) {
    const h = headers();
    h.set(PART_HEADER, `${i + 1}/${count}`);
    nc.publish(subject, bytes.subarray(i * limit, (i + 1) * limit), { headers: h });
  }
}

/**
 * Puts split messages back together, one at a time (parts of one message never interleave with
 * another's on one stream). A part out of order, or a message growing past `maxMessageBytes`, is a
 * broken stream: `accept` throws and the call ends.
 */
export class FrameAssembler {
  readonly #maxMessageBytes: number;
  #parts: Uint8Array[] = [];
  #bytes = 0;
  #expected: { next: number; count: number } | undefined;

  constructor(maxMessageBytes: number) {
    this.#maxMessageBytes = maxMessageBytes;
  }

  /** The decoded message once `msg` completes one; `undefined` while parts are still missing. */
  accept(msg: Msg): unknown {
    const part = msg.headers?.get(PART_HEADER);
    if (!part) {
      if (this.#expected) throw brokenStream("a whole message arrived in the middle of a split one");
      return decodeMessage(msg.data);
    }
    const match = /^(\d+)\/(\d+)$/.exec(part);
    const index = Number(match?.[1]);
    const count = Number(match?.[2]);
    const expected = this.#expected ?? { next: 1, count };
    if (!match || index !== expected.next || count !== expected.count || count < 2) {
      throw brokenStream(`part ${part} arrived where ${expected.next}/${expected.count} was due`);
    }
    this.#bytes += msg.data.length;
    if (this.#bytes > this.#maxMessageBytes) {
      throw brokenStream(`a split message grew past ${this.#maxMessageBytes} bytes`);
    }
    this.#parts.push(msg.data);
    if (index < count) {
      this.#expected = { next: index + 1, count };
      return undefined;
    }
    const whole = Buffer.concat(this.#parts, this.#bytes);
    this.#parts = [];
    this.#bytes = 0;
    this.#expected = undefined;
    return decodeMessage(whole);
  }
}

function brokenStream(detail: string): ArmatureError {
  return new ArmatureError("WORKER_UNAVAILABLE", `broken response stream: ${detail}`, { retryable: true });
}
