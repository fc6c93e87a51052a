import type { Socket } from "node:net";
import { StreamingChecksum } from "../checksum.js";
import { type FrameHeader, MAX_HEADER_BYTES, MAX_PAYLOAD_BYTES, malformedFrame, parseFrameHeader } from "./tcp-frame-header.js";

export type { FrameHeader, FrameOp } from "./tcp-frame-header.js";

/** Payload bytes are written in slices of this size, each waiting for the socket to drain. */
export const SLICE_BYTES = 1 << 20;

/** Frames up to this payload size go out in a single write. */
const SMALL_FRAME_BYTES = 64 << 10;

/** Bytes of the XXH64 trailer after every payload. */
const TRAILER_BYTES = 8;

/**
 * A received frame; `intact` is false when its payload does not match its trailer checksum, or
 * when the payload was dropped (`payload` undefined: `landing` gave it nowhere to go).
 */
export type FrameHandler = (header: FrameHeader, payload: Buffer | undefined, intact: boolean) => void;

/**
 * Where a frame's payload lands: a buffer at least `header.length` long, or undefined to read the
 * payload and drop it (a write to a region that is gone still has to be consumed to keep the stream
 * in step). Called only for frames whose header passed `parseFrameHeader`.
 */
export type FrameLanding = (header: FrameHeader) => Buffer | undefined;

export interface FrameReaderOptions {
  /** Largest payload accepted; a larger declared length is a malformed frame. Default `MAX_PAYLOAD_BYTES`. */
  readonly maxPayloadBytes?: number;
}

/**
 * Parses `[u32 LE header length][header JSON][payload][u64 LE XXH64 of the payload]` frames from
 * socket chunks. Payload bytes are copied straight into the buffer `landing` returns for the header
 * (a preallocated landing buffer or staging buffer), and hashed as they land, so large transfers are
 * never concatenated and their checksum costs no extra pass.
 *
 * Peer-supplied sizes are checked before use: a header over `MAX_HEADER_BYTES`, a header that is not
 * a known op with its fields, or a payload longer than its landing buffer throws a
 * `TRANSFER_FAILED` "malformed transfer frame" error; the caller closes the connection.
 */
export class FrameReader {
  readonly #landing: FrameLanding;
  readonly #onFrame: FrameHandler;
  readonly #maxPayloadBytes: number;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  /** What the pending bytes will be: the header's length, the header, or the payload's trailer. */
  #expect: "length" | "header" | "trailer" = "length";
  #headerLength = 0;
  #header: FrameHeader | undefined;
  #payload: Buffer | undefined;
  #hash: StreamingChecksum | undefined;
  #filled = 0;
  /** Payload bytes still to drop (a payload with nowhere to land). */
  #dropping = 0;

  constructor(landing: FrameLanding, onFrame: FrameHandler, options: FrameReaderOptions = {}) {
    this.#landing = landing;
    this.#onFrame = onFrame;
    this.#maxPayloadBytes = options.maxPayloadBytes ?? MAX_PAYLOAD_BYTES;
  }

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.#dropping > 0) {
        const take = Math.min(chunk.length - at, this.#dropping);
        this.#dropping -= take;
        at += take;
        if (this.#dropping === 0) this.#expect = "trailer";
        continue;
      }
      if (this.#payload && this.#filled < this.#payload.length) {
        const take = Math.min(chunk.length - at, this.#payload.length - this.#filled);
        chunk.copy(this.#payload, this.#filled, at, at + take);
        this.#hash?.update(this.#payload.subarray(this.#filled, this.#filled + take));
        this.#filled += take;
        at += take;
        if (this.#filled === this.#payload.length) this.#expect = "trailer";
        continue;
      }
      const need = this.#expect === "length" ? 4 : this.#expect === "header" ? this.#headerLength : TRAILER_BYTES;
      const take = Math.min(chunk.length - at, need - this.#pendingBytes);
      this.#pending.push(chunk.subarray(at, at + take));
      this.#pendingBytes += take;
      at += take;
      if (this.#pendingBytes < need) continue;
      const bytes = this.#pending.length === 1 ? (this.#pending[0] as Buffer) : Buffer.concat(this.#pending);
      this.#pending = [];
      this.#pendingBytes = 0;
      if (this.#expect === "length") {
        this.#headerLength = bytes.readUInt32LE(0);
        if (this.#headerLength === 0 || this.#headerLength > MAX_HEADER_BYTES) {
          throw malformedFrame(`a header of ${this.#headerLength} bytes (at most ${MAX_HEADER_BYTES})`);
        }
        this.#expect = "header";
      } else if (this.#expect === "header") {
        this.#startPayload(parseFrameHeader(bytes, this.#maxPayloadBytes));
      } else {
        this.#finish(this.#hash !== undefined && bytes.readBigUInt64LE(0) === this.#hash.digest());
      }
    }
  }

  #startPayload(header: FrameHeader): void {
    this.#header = header;
    const length = header.length ?? 0;
    if (length === 0) {
      this.#finish(true);
      return;
    }
    const landing = this.#landing(header);
    if (!landing) {
      this.#dropping = length;
      return;
    }
    if (landing.length < length) {
      throw malformedFrame(`${header.op} ${header.id}: ${length} payload bytes for a buffer of ${landing.length}`);
    }
    this.#payload = landing.subarray(0, length);
    this.#hash = new StreamingChecksum();
    this.#filled = 0;
  }

  #finish(intact: boolean): void {
    const header = this.#header as FrameHeader;
    const payload = this.#payload;
    this.#header = undefined;
    this.#payload = undefined;
    this.#hash = undefined;
    this.#expect = "length";
    this.#onFrame(header, payload, intact);
  }
}

/** Writes frames one after another on a socket, respecting backpressure. */
export class FrameWriter {
  readonly #socket: Socket;
  #tail: Promise<void> = Promise.resolve();

  constructor(socket: Socket) {
    this.#socket = socket;
  }

  send(header: FrameHeader, payload?: Uint8Array): Promise<void> {
    const run = this.#tail.then(() => this.#write(header, payload));
    this.#tail = run.catch(() => undefined);
    return run;
  }

  async #write(header: FrameHeader, payload: Uint8Array | undefined): Promise<void> {
    const json = Buffer.from(JSON.stringify(payload ? { ...header, length: payload.length } : header), "utf8");
    const prefix = Buffer.allocUnsafe(4);
    prefix.writeUInt32LE(json.length, 0);
    if (!payload || payload.length === 0) {
      if (!this.#socket.write(Buffer.concat([prefix, json]))) await drained(this.#socket);
      return;
    }
    const hash = new StreamingChecksum();
    if (payload.length <= SMALL_FRAME_BYTES) {
      // One write, one packet: small frames are latency, not bandwidth.
      hash.update(payload);
      if (!this.#socket.write(Buffer.concat([prefix, json, payload, trailer(hash)]))) await drained(this.#socket);
      return;
    }
    this.#socket.write(prefix);
    let ok = this.#socket.write(json);
    for (let at = 0; at < payload.length; at += SLICE_BYTES) {
      if (!ok) await drained(this.#socket);
      const slice = payload.subarray(at, Math.min(payload.length, at + SLICE_BYTES));
      hash.update(slice);
      ok = this.#socket.write(slice);
    }
    if (!ok) await drained(this.#socket);
    if (!this.#socket.write(trailer(hash))) await drained(this.#socket);
  }
}

function trailer(hash: StreamingChecksum): Buffer {
  const bytes = Buffer.allocUnsafe(TRAILER_BYTES);
  bytes.writeBigUInt64LE(hash.digest(), 0);
  return bytes;
}

function drained(socket: Socket): Promise<void> {
  return new Promise((resolve, reject) => {
    if (socket.destroyed) {
      reject(new Error("connection closed"));
      return;
    }
    const cleanup = (): void => {
      socket.off("drain", onDrain);
      socket.off("close", onClose);
    };
    const onDrain = (): void => {
      cleanup();
      resolve();
    };
    const onClose = (): void => {
      cleanup();
      reject(new Error("connection closed"));
    };
    socket.on("drain", onDrain);
    socket.on("close", onClose);
  });
}
