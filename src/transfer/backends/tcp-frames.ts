import type { Socket } from "node:net";

/** Control header of one frame; `length` payload bytes follow it when present. */
export interface FrameHeader {
  readonly op: "read" | "write" | "data" | "ack" | "error" | "notify";
  readonly id: number;
  readonly length?: number;
  readonly [key: string]: unknown;
}

/** Payload bytes are written in slices of this size, each waiting for the socket to drain. */
export const SLICE_BYTES = 1 << 20;

/** Frames up to this payload size go out in a single write. */
const SMALL_FRAME_BYTES = 64 << 10;

/**
 * Parses `[u32 LE header length][header JSON][payload]` frames from socket chunks. Payload bytes are
 * copied straight into the buffer `landing` returns for the header (a preallocated region or staging
 * buffer), so large transfers are never concatenated.
 */
export class FrameReader {
  readonly #landing: (header: FrameHeader) => Buffer;
  readonly #onFrame: (header: FrameHeader, payload: Buffer | undefined) => void;
  #pending: Buffer[] = [];
  #pendingBytes = 0;
  #headerLength = -1;
  #header: FrameHeader | undefined;
  #payload: Buffer | undefined;
  #filled = 0;

  constructor(landing: (header: FrameHeader) => Buffer, onFrame: (header: FrameHeader, payload: Buffer | undefined) => void) {
    this.#landing = landing;
    this.#onFrame = onFrame;
  }

  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.#payload && this.#header) {
        const take = Math.min(chunk.length - at, this.#payload.length - this.#filled);
        chunk.copy(this.#payload, this.#filled, at, at + take);
        this.#filled += take;
        at += take;
        if (this.#filled === this.#payload.length) this.#finish();
        continue;
      }
      const need = this.#headerLength < 0 ? 4 : this.#headerLength;
      const take = Math.min(chunk.length - at, need - this.#pendingBytes);
      this.#pending.push(chunk.subarray(at, at + take));
      this.#pendingBytes += take;
      at += take;
      if (this.#pendingBytes < need) continue;
      const bytes = this.#pending.length === 1 ? (this.#pending[0] as Buffer) : Buffer.concat(this.#pending);
      this.#pending = [];
      this.#pendingBytes = 0;
      if (this.#headerLength < 0) {
        this.#headerLength = bytes.readUInt32LE(0);
        continue;
      }
      this.#headerLength = -1;
      this.#header = JSON.parse(bytes.toString("utf8")) as FrameHeader;
      const length = this.#header.length ?? 0;
      if (length > 0) {
        this.#payload = this.#landing(this.#header).subarray(0, length);
        this.#filled = 0;
      } else {
        this.#finish();
      }
    }
  }

  #finish(): void {
    const header = this.#header as FrameHeader;
    const payload = this.#payload;
    this.#header = undefined;
    this.#payload = undefined;
    this.#onFrame(header, payload);
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
    if (!payload || payload.length <= SMALL_FRAME_BYTES) {
      // One write, one packet: small frames are latency, not bandwidth.
      const ok = this.#socket.write(payload ? Buffer.concat([prefix, json, payload]) : Buffer.concat([prefix, json]));
      if (!ok) await drained(this.#socket);
      return;
    }
    this.#socket.write(prefix);
    let ok = this.#socket.write(json);
    for (let at = 0; at < payload.length; at += SLICE_BYTES) {
      if (!ok) await drained(this.#socket);
      ok = this.#socket.write(payload.subarray(at, Math.min(payload.length, at + SLICE_BYTES)));
    }
    if (!ok) await drained(this.#socket);
  }
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
