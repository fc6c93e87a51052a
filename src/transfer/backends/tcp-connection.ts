import { connect, type Socket } from "node:net";
import { ArmatureError, type ErrorCode } from "../../protocol/index.js";
import { type FrameHeader, FrameReader, FrameWriter } from "./tcp-frames.js";

interface Pending {
  readonly landing: Buffer | undefined;
  resolve(): void;
  reject(error: Error): void;
}

/**
 * One persistent connection to a peer agent's listener. Requests are pipelined; `read` lands the
 * answer in the caller's buffer and checks its checksum. A broken connection fails what is pending
 * (retryably) and the next request reconnects.
 */
export class TcpConnection {
  readonly #host: string;
  readonly #port: number;
  #socket: Socket | undefined;
  #writer: FrameWriter | undefined;
  #ready: Promise<void> | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;

  constructor(host: string, port: number) {
    this.#host = host;
    this.#port = port;
  }

  async read(region: string, offset: number, landing: Buffer, signal?: AbortSignal): Promise<void> {
    await this.#request({ op: "read", id: 0, region, offset, readLength: landing.length }, undefined, landing, signal);
  }

  async write(region: string, offset: number, bytes: Uint8Array, signal?: AbortSignal): Promise<void> {
    await this.#request({ op: "write", id: 0, region, offset }, bytes, undefined, signal);
  }

  async notify(from: string, message: string, signal?: AbortSignal): Promise<void> {
    await this.#request({ op: "notify", id: 0, from, message }, undefined, undefined, signal);
  }

  close(): void {
    this.#socket?.destroy();
  }

  async #request(header: FrameHeader, payload: Uint8Array | undefined, landing: Buffer | undefined, signal?: AbortSignal) {
    signal?.throwIfAborted();
    await this.#connect();
    const id = ++this.#nextId;
    const socket = this.#socket as Socket;
    const done = new Promise<void>((resolve, reject) => this.#pending.set(id, { landing, resolve, reject }));
    // An abort cannot take back bytes already on the wire: drop the connection and start afresh.
    const onAbort = (): void => {
      socket.destroy();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      await (this.#writer as FrameWriter).send({ ...header, id }, payload);
      await done;
    } catch (error) {
      if (signal?.aborted) throw new ArmatureError("REQUEST_CANCELLED", "the transfer was aborted", { cause: error });
      throw error;
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.#pending.delete(id);
    }
  }

  #connect(): Promise<void> {
    if (this.#ready && this.#socket && !this.#socket.destroyed) return this.#ready;
    const socket = connect({ host: this.#host, port: this.#port, noDelay: true });
    this.#socket = socket;
    this.#writer = new FrameWriter(socket);
    const reader = new FrameReader(
      (header) => this.#pending.get(header.id)?.landing ?? Buffer.allocUnsafe(header.length ?? 0),
      (header, payload, intact) => this.#answer(header, payload, intact),
    );
    socket.on("data", (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch {
        socket.destroy();
      }
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      for (const pending of this.#pending.values()) {
        pending.reject(
          new ArmatureError("TRANSFER_FAILED", `connection to transfer agent ${this.#host}:${this.#port} closed`, {
            retryable: true,
          }),
        );
      }
      this.#pending.clear();
    });
    this.#ready = new Promise<void>((resolve, reject) => {
      socket.once("connect", () => resolve());
      socket.once("error", (error) =>
        reject(
          new ArmatureError("TRANSFER_FAILED", `cannot reach transfer agent at ${this.#host}:${this.#port}: ${error.message}`, {
            cause: error,
            retryable: true,
          }),
        ),
      );
    });
    return this.#ready;
  }

  #answer(header: FrameHeader, payload: Buffer | undefined, intact: boolean): void {
    const pending = this.#pending.get(header.id);
    if (!pending) return;
    if (header.op === "error") {
      const code = String(header.code) as ErrorCode;
      pending.reject(new ArmatureError(code, String(header.message), { retryable: code === "TRANSFER_CORRUPTED" }));
    } else if (header.op === "data" && !intact) {
      pending.reject(
        new ArmatureError("TRANSFER_CORRUPTED", `checksum mismatch on a read of ${payload?.length ?? 0} bytes`, {
          retryable: true,
        }),
      );
    } else {
      pending.resolve();
    }
  }
}
