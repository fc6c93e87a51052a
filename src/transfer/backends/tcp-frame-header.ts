import { constants } from "node:buffer";
import { ArmatureError } from "../../protocol/index.js";

/** Operations a frame can carry; anything else is a malformed frame. */
export const frameOps = ["hello", "auth", "welcome", "read", "write", "data", "ack", "error", "notify"] as const;
export type FrameOp = (typeof frameOps)[number];

/** Control header of one frame; `length` payload bytes follow it when present. */
export interface FrameHeader {
  readonly op: FrameOp;
  readonly id: number;
  readonly length?: number;
  readonly [key: string]: unknown;
}

/**
 * Longest header accepted. Headers carry a region id, offsets and short strings (a notification, an
 * error message): 64 KiB is far above what a well-behaved peer sends and small enough to buffer.
 */
export const MAX_HEADER_BYTES = 64 << 10;

/**
 * Default bound of one frame's payload: the largest Buffer this Node can allocate. The real bound is
 * tighter: a payload lands only in a buffer its receiver sized (a region it registered, a landing
 * buffer it asked for), so no payload length is ever allocated because a peer said so.
 */
export const MAX_PAYLOAD_BYTES = constants.MAX_LENGTH;

/** Only these ops may carry a payload. */
const payloadOps: ReadonlySet<FrameOp> = new Set(["write", "data"]);

/** Fields each op must carry, and their types. */
const requiredFields: Record<FrameOp, Readonly<Record<string, "string" | "count">>> = {
  hello: {},
  auth: { nonce: "string", proof: "string" },
  welcome: { proof: "string" },
  read: { region: "string", offset: "count", readLength: "count" },
  write: { region: "string", offset: "count" },
  data: {},
  ack: {},
  error: { code: "string", message: "string" },
  notify: { from: "string", message: "string" },
};

/** A frame the peer should never have sent; the connection it came on is closed. */
export function malformedFrame(problem: string): ArmatureError {
  return new ArmatureError("TRANSFER_FAILED", `malformed transfer frame: ${problem}; the connection was closed`);
}

const isCount = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) >= 0;

/** Parses and checks a header: an object with a known op, a safe-integer id and the op's fields. */
export function parseFrameHeader(bytes: Buffer, maxPayloadBytes: number): FrameHeader {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw malformedFrame("the header is not JSON");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw malformedFrame("the header is not an object");
  const header = parsed as Record<string, unknown>;
  const op = header.op;
  if (typeof op !== "string" || !(frameOps as readonly string[]).includes(op)) {
    throw malformedFrame(`unknown op ${JSON.stringify(op)?.slice(0, 40)}`);
  }
  if (!isCount(header.id)) throw malformedFrame(`${op}: id must be a non-negative safe integer`);
  const length = header.length;
  if (length !== undefined) {
    if (!isCount(length)) throw malformedFrame(`${op}: length must be a non-negative safe integer`);
    if (length > maxPayloadBytes)
      throw malformedFrame(`${op}: a payload of ${length} bytes is over the ${maxPayloadBytes} allowed`);
    if (length > 0 && !payloadOps.has(op as FrameOp)) throw malformedFrame(`${op} frames carry no payload`);
  }
  for (const [field, type] of Object.entries(requiredFields[op as FrameOp])) {
    const value = header[field];
    const ok = type === "string" ? typeof value === "string" : isCount(value);
    if (!ok) throw malformedFrame(`${op}: ${field} must be ${type === "string" ? "a string" : "a non-negative safe integer"}`);
  }
  if (op === "read" && (header.readLength as number) > maxPayloadBytes) {
    throw malformedFrame(`read: ${String(header.readLength)} bytes is over the ${maxPayloadBytes} allowed`);
  }
  return header as unknown as FrameHeader;
}
