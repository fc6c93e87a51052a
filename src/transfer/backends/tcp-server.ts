import { createServer, type Server, type Socket } from "node:net";
import { ArmatureError, isArmatureError } from "../../protocol/index.js";
import { type RegionTable, regionAccess } from "../regions.js";
import { type FrameHeader, FrameReader, FrameWriter } from "./tcp-frames.js";

export interface TcpServeHandlers {
  readonly regions: RegionTable;
  onNotify(from: string, message: string): void;
}

/**
 * An agent's listener: peers read from and write to its registered regions and send it
 * notifications over persistent connections.
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
    socket.on("close", () => this.#sockets.delete(socket));
    socket.on("error", () => socket.destroy());
    const writer = new FrameWriter(socket);
    const fail = (id: number, error: unknown): void => {
      const code = isArmatureError(error) ? error.code : "TRANSFER_FAILED";
      writer.send({ op: "error", id, code, message: (error as Error).message }).catch(() => socket.destroy());
    };
    const landing = (header: FrameHeader): Buffer => {
      try {
        const region = handlers.regions.get(String(header.region), Number(header.offset), header.length ?? 0);
        if (region.medium === "memory") return region.buffer.subarray(Number(header.offset));
      } catch {
        // Answered in the frame handler; the bytes still have to be consumed.
      }
      return Buffer.allocUnsafe(header.length ?? 0);
    };
    const reader = new FrameReader(landing, (header, payload, intact) => {
      handle(header, payload, intact, handlers, writer).catch((error: unknown) => fail(header.id, error));
    });
    socket.on("data", (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch {
        socket.destroy();
      }
    });
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}

async function handle(
  header: FrameHeader,
  payload: Buffer | undefined,
  intact: boolean,
  handlers: TcpServeHandlers,
  writer: FrameWriter,
): Promise<void> {
  if (header.op === "notify") {
    handlers.onNotify(String(header.from), String(header.message));
    await writer.send({ op: "ack", id: header.id });
    return;
  }
  const offset = Number(header.offset);
  if (header.op === "read") {
    const length = Number(header.readLength);
    const region = handlers.regions.get(String(header.region), offset, length);
    let bytes: Buffer;
    if (region.medium === "memory") bytes = region.buffer.subarray(offset, offset + length);
    else {
      bytes = Buffer.allocUnsafe(length);
      await regionAccess(region).readInto(offset, bytes);
    }
    await writer.send({ op: "data", id: header.id }, bytes);
    return;
  }
  if (header.op === "write") {
    const bytes = payload ?? Buffer.alloc(0);
    const region = handlers.regions.get(String(header.region), offset, bytes.length);
    if (!intact) {
      throw new ArmatureError("TRANSFER_CORRUPTED", `checksum mismatch on a write of ${bytes.length} bytes`, { retryable: true });
    }
    if (region.medium !== "memory") await regionAccess(region).writeFrom(offset, bytes);
    await writer.send({ op: "ack", id: header.id });
    return;
  }
  throw new ArmatureError("TRANSFER_FAILED", `unknown transfer op ${String(header.op)}`);
}
