import { createServer, type Server, type Socket } from "node:net";
import { ArmatureError, isArmatureError } from "../../protocol/index.js";
import { type RegionTable, regionAccess } from "../regions.js";
import { malformedFrame } from "./tcp-frame-header.js";
import { type FrameHeader, FrameReader, FrameWriter } from "./tcp-frames.js";
import { HANDSHAKE_TIMEOUT_MS, handshakeProof, newNonce, proofMatches, SECRET_HINT } from "./tcp-handshake.js";

/** Why the listener closed a connection. */
export type RefusalReason = "malformed" | "unauthenticated";

export interface TcpServeHandlers {
  readonly regions: RegionTable;
  /** Peers must prove they hold this (see tcp-handshake.ts); absent: any peer that connects is served. */
  readonly secret?: string | undefined;
  onNotify(from: string, message: string): void;
  /** Hears every connection the listener closed for what its peer sent (or did not send). */
  onRefused(reason: RefusalReason, detail: string, peer: string): void;
}

/** Ops a peer may ask of the listener once authenticated. */
const requestOps: ReadonlySet<string> = new Set(["read", "write", "notify"]);

/**
 * An agent's listener: peers read from and write to its registered regions and send it
 * notifications over persistent connections. Everything a peer sends is checked before use: the
 * handshake first (when there is a secret), then each frame's shape and sizes; a connection that
 * breaks a rule is told why, closed and reported through `onRefused`, and nothing else is affected.
 */
export class TcpTransferServer {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();

  private constructor(server: Server) {
    this.#server = server;
  }

  static async listen(host: string, port: number, handlers: TcpServeHandlers): Promise<TcpTransferServer> {
    const server = createServer({ noDelay: true });
    const instance = new TcpTransferServer(server);
    server.on("connection", (socket) => instance.#accept(socket, handlers));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    return instance;
  }

  get port(): number {
    const address = this.#server.address();
    return typeof address === "object" && address ? address.port : 0;
  }

  #accept(socket: Socket, handlers: TcpServeHandlers): void {
    this.#sockets.add(socket);
    const peer = `${socket.remoteAddress}:${socket.remotePort}`;
    const writer = new FrameWriter(socket);
    const { secret } = handlers;
    const listenerNonce = secret === undefined ? undefined : newNonce();
    let authenticated = secret === undefined;
    let refused = false;
    const refuse = (reason: RefusalReason, error: Error): void => {
      if (refused) return;
      refused = true;
      clearTimeout(timer);
      handlers.onRefused(reason, error.message, peer);
      const closeSoon = (): void => {
        socket.end();
        setTimeout(() => socket.destroy(), 1000).unref();
      };
      // Tell the peer why before closing, so its error names the cause.
      writer.send({ op: "error", id: 0, code: "TRANSFER_FAILED", message: error.message }).then(closeSoon, closeSoon);
    };
    const timer = setTimeout(() => {
      if (!authenticated) refuse("unauthenticated", new Error(`no handshake within ${HANDSHAKE_TIMEOUT_MS} ms`));
    }, HANDSHAKE_TIMEOUT_MS);
    timer.unref();
    socket.on("close", () => {
      clearTimeout(timer);
      this.#sockets.delete(socket);
    });
    socket.on("error", () => socket.destroy());

    const fail = (id: number, error: unknown): void => {
      const code = isArmatureError(error) ? error.code : "TRANSFER_FAILED";
      writer.send({ op: "error", id, code, message: (error as Error).message }).catch(() => socket.destroy());
    };
    const landing = (header: FrameHeader): Buffer | undefined => {
      if (!authenticated) throw unauthenticated("a payload before the handshake");
      if (header.op !== "write") return undefined;
      const length = header.length ?? 0;
      try {
        handlers.regions.get(header.region as string, header.offset as number, length);
      } catch {
        return undefined; // Answered in the frame handler; the bytes are dropped as they arrive.
      }
      // A staging buffer, never the region itself: the bytes are unverified until the trailer
      // matches, and a peer reading the region meanwhile must not see them (see `handle`).
      return Buffer.allocUnsafe(length);
    };
    const reader = new FrameReader(landing, (header, payload, intact) => {
      if (!authenticated) {
        authenticate(header);
        return;
      }
      if (!requestOps.has(header.op)) throw malformedFrame(`a listener is not asked '${header.op}'`);
      handle(header, payload, intact, handlers, writer).catch((error: unknown) => fail(header.id, error));
    });
    const authenticate = (header: FrameHeader): void => {
      const listener = listenerNonce as string;
      const dialer = header.nonce;
      if (header.op !== "auth" || typeof dialer !== "string") throw unauthenticated(`'${header.op}' before the handshake`);
      if (!proofMatches(handshakeProof(secret as string, "client", listener, dialer), header.proof as string)) {
        throw unauthenticated("its proof does not match this deployment's secret");
      }
      authenticated = true;
      clearTimeout(timer);
      writer
        .send({ op: "welcome", id: 0, proof: handshakeProof(secret as string, "server", listener, dialer) })
        .catch(() => socket.destroy());
    };
    socket.on("data", (chunk: Buffer) => {
      if (refused) return;
      try {
        reader.push(chunk);
      } catch (error) {
        refuse(authenticated ? "malformed" : "unauthenticated", error as Error);
      }
    });
    writer
      .send({ op: "hello", id: 0, ...(listenerNonce === undefined ? {} : { nonce: listenerNonce }) })
      .catch(() => socket.destroy());
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

function unauthenticated(what: string): ArmatureError {
  return new ArmatureError(
    "TRANSFER_FAILED",
    `transfer connection refused: ${what}; every worker of a deployment needs the same ${SECRET_HINT}`,
  );
}

async function handle(
  header: FrameHeader,
  payload: Buffer | undefined,
  intact: boolean,
  handlers: TcpServeHandlers,
  writer: FrameWriter,
): Promise<void> {
  if (header.op === "notify") {
    handlers.onNotify(header.from as string, header.message as string);
    await writer.send({ op: "ack", id: header.id });
    return;
  }
  const regionId = header.region as string;
  const offset = header.offset as number;
  if (header.op === "read") {
    const length = header.readLength as number;
    const region = handlers.regions.get(regionId, offset, length);
    let bytes: Buffer;
    if (region.medium === "memory") bytes = region.buffer.subarray(offset, offset + length);
    else {
      bytes = Buffer.allocUnsafe(length);
      await regionAccess(region).readInto(offset, bytes);
    }
    await writer.send({ op: "data", id: header.id }, bytes);
    return;
  }
  // A write: its payload sits in a staging buffer and reaches the region only once its checksum matched.
  const length = header.length ?? 0;
  const region = handlers.regions.get(regionId, offset, length);
  if (!intact && payload) {
    throw new ArmatureError("TRANSFER_CORRUPTED", `checksum mismatch on a write of ${length} bytes`, { retryable: true });
  }
  if (length > 0 && !payload) {
    throw new ArmatureError("TRANSFER_FAILED", `region ${regionId} was not registered when its write arrived`, {
      retryable: true,
    });
  }
  await regionAccess(region).writeFrom(offset, payload ?? Buffer.alloc(0));
  await writer.send({ op: "ack", id: header.id });
}
