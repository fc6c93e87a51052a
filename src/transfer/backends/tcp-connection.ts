import { connect, type Socket } from "node:net";
import { ArmatureError, type ErrorCode } from "../../protocol/index.js";
import { malformedFrame } from "./tcp-frame-header.js";
import { type FrameHeader, FrameReader, FrameWriter } from "./tcp-frames.js";
import { HANDSHAKE_TIMEOUT_MS, handshakeProof, newNonce, proofMatches, SECRET_HINT } from "./tcp-handshake.js";

interface Pending {
  readonly landing: Buffer | undefined;
  resolve(): void;
  reject(error: Error): void;
}

/** Codes a listener may answer with; any other is reported as TRANSFER_FAILED. */
const peerCodes: ReadonlySet<string> = new Set<ErrorCode>(["TRANSFER_FAILED", "TRANSFER_CORRUPTED", "REQUEST_INVALID"]);

/**
 * One persistent connection to a peer agent's listener. It opens with the handshake of
 * tcp-handshake.ts (proving `secret` when there is one, and refusing a listener that cannot prove
 * it back). Requests are pipelined; `read` lands the answer in the caller's buffer and checks its
 * checksum. A broken connection fails what is pending (retryably) and the next request reconnects.
 */
export class TcpConnection {
  readonly #host: string;
  readonly #port: number;
  readonly #secret: string | undefined;
  #socket: Socket | undefined;
  #writer: FrameWriter | undefined;
  #ready: Promise<void> | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;

  constructor(host: string, port: number, secret?: string) {
    this.#host = host;
    this.#port = port;
    this.#secret = secret;
  }

  /**
   * Reads `landing.length` bytes of a peer's region into `landing`. The payload lands in `landing`
   * itself as it arrives (zero copy), before its checksum is known: that is safe because `landing`
   * is the caller's own buffer, which it may use only once this promise resolves, and a mismatch
   * rejects (TRANSFER_CORRUPTED) so the caller retries or drops the bytes.
   */
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
    const where = `${this.#host}:${this.#port}`;
    const socket = connect({ host: this.#host, port: this.#port, noDelay: true });
    const writer = new FrameWriter(socket);
    this.#socket = socket;
    this.#writer = writer;
    let authenticated = false;
    let dialerNonce = "";
    let listenerNonce = "";
    let settle!: (error?: Error) => void;
    this.#ready = new Promise<void>((resolve, reject) => {
      let settled = false;
      settle = (error) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (error) {
          reject(error);
          socket.destroy();
        } else resolve();
      };
    });
    const timer = setTimeout(
      () => settle(refused(where, `no handshake within ${HANDSHAKE_TIMEOUT_MS} ms`, true)),
      HANDSHAKE_TIMEOUT_MS,
    );
    timer.unref();
    const handshake = (header: FrameHeader): void => {
      if (header.op === "error") {
        throw new ArmatureError("TRANSFER_FAILED", `transfer agent ${where} refused the connection: ${String(header.message)}`);
      }
      if (header.op === "hello" && !listenerNonce) {
        const nonce = header.nonce;
        if (nonce === undefined && this.#secret === undefined) {
          authenticated = true;
          settle();
          return;
        }
        if (typeof nonce !== "string") throw refused(where, "it does not ask for a secret but this worker holds one", false);
        if (this.#secret === undefined) throw refused(where, "it asks for a secret and this worker has none", false);
        listenerNonce = nonce;
        dialerNonce = newNonce();
        const proof = handshakeProof(this.#secret, "client", listenerNonce, dialerNonce);
        writer.send({ op: "auth", id: 0, nonce: dialerNonce, proof }).catch(() => socket.destroy());
        return;
      }
      if (header.op === "welcome" && listenerNonce) {
        const expected = handshakeProof(this.#secret as string, "server", listenerNonce, dialerNonce);
        if (!proofMatches(expected, header.proof as string))
          throw refused(where, "it could not prove it holds the secret", false);
        authenticated = true;
        settle();
        return;
      }
      throw malformedFrame(`'${header.op}' during the handshake`);
    };
    const reader = new FrameReader(
      (header) => this.#landing(header),
      (header, payload, intact) => (authenticated ? this.#answer(header, payload, intact) : handshake(header)),
    );
    socket.on("data", (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (error) {
        settle(error as Error);
        this.#failPending(error as Error);
        socket.destroy();
      }
    });
    socket.on("error", (error) =>
      settle(
        new ArmatureError("TRANSFER_FAILED", `cannot reach transfer agent at ${where}: ${error.message}`, {
          cause: error,
          retryable: true,
        }),
      ),
    );
    socket.on("close", () => {
      settle(new ArmatureError("TRANSFER_FAILED", `transfer agent ${where} closed the connection`, { retryable: true }));
      this.#failPending(
        new ArmatureError("TRANSFER_FAILED", `connection to transfer agent ${where} closed`, { retryable: true }),
      );
    });
    return this.#ready;
  }

  /** Only a `data` frame answering a pending read carries bytes, exactly as many as were asked. */
  #landing(header: FrameHeader): Buffer {
    const landing = header.op === "data" ? this.#pending.get(header.id)?.landing : undefined;
    if (!landing || landing.length !== header.length) {
      throw malformedFrame(`${header.length ?? 0} bytes in '${header.op}' ${header.id}, which asked for ${landing?.length ?? 0}`);
    }
    return landing;
  }

  #failPending(error: Error): void {
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }

  #answer(header: FrameHeader, payload: Buffer | undefined, intact: boolean): void {
    if (header.op === "error" && header.id === 0) {
      // The listener is closing this connection and says why.
      this.#failPending(
        new ArmatureError("TRANSFER_FAILED", `transfer agent ${this.#host}:${this.#port}: ${String(header.message)}`),
      );
      return;
    }
    const pending = this.#pending.get(header.id);
    if (!pending) return;
    if (header.op === "error") {
      const code = (peerCodes.has(header.code as string) ? header.code : "TRANSFER_FAILED") as ErrorCode;
      pending.reject(new ArmatureError(code, String(header.message), { retryable: code === "TRANSFER_CORRUPTED" }));
    } else if (header.op === "data" && !intact) {
      pending.reject(
        new ArmatureError("TRANSFER_CORRUPTED", `checksum mismatch on a read of ${payload?.length ?? 0} bytes`, {
          retryable: true,
        }),
      );
    } else if (header.op === "data" ? pending.landing !== undefined : header.op === "ack" && pending.landing === undefined) {
      pending.resolve();
    } else {
      pending.reject(malformedFrame(`'${header.op}' answering request ${header.id}`));
    }
  }
}

function refused(where: string, why: string, retryable: boolean): ArmatureError {
  return new ArmatureError("TRANSFER_FAILED", `transfer agent ${where} refused the connection: ${why}; ${SECRET_HINT}`, {
    retryable,
  });
}
