import { randomBytes, timingSafeEqual } from "node:crypto";
import { Agent, createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { PRIORITY_LIMIT } from "../../protocol/index.js";
import { PRIORITY_HEADER } from "../request-scheduling.js";
import type { BatchCall, BatchSend } from "./batch-runner.js";

const TOKEN_HEADER = "x-armature-batch-token";
const OWNER_HEADER = "x-armature-batch-owner";

/**
 * How a batch's requests reach the frontend's own routes: a plain-HTTP listener on 127.0.0.1 that
 * hands each request to `handle` (the frontend's dispatch, the code every client request runs) as
 * the batch's owner. Only this process can use it: each request must carry a random token made at
 * start, compared in constant time; anything else is refused with 403 before it is read.
 */
export class BatchLoopback {
  readonly #server: Server;
  readonly #token: Buffer;
  readonly #agent = new Agent({ keepAlive: true });

  private constructor(server: Server, token: Buffer) {
    this.#server = server;
    this.#token = token;
  }

  static async start(handle: (req: IncomingMessage, res: ServerResponse, owner: string | null) => void): Promise<BatchLoopback> {
    const token = randomBytes(32);
    const server = createServer((req, res) => {
      const presented = req.headers[TOKEN_HEADER];
      const given = typeof presented === "string" ? Buffer.from(presented, "hex") : Buffer.alloc(0);
      if (given.length !== token.length || !timingSafeEqual(given, token)) {
        req.resume();
        res.writeHead(403).end();
        return;
      }
      const owner = req.headers[OWNER_HEADER];
      handle(req, res, typeof owner === "string" ? owner : null);
    });
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    return new BatchLoopback(server, token);
  }

  /** Sends one batch request at the lowest priority; see {@link BatchSend}. */
  readonly send: BatchSend = (endpoint, body, owner, requestId, signal) =>
    new Promise<BatchCall>((resolve, reject) => {
      const payload = JSON.stringify(body);
      const { port } = this.#server.address() as AddressInfo;
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "content-length": String(Buffer.byteLength(payload)),
        [TOKEN_HEADER]: this.#token.toString("hex"),
        [PRIORITY_HEADER]: String(PRIORITY_LIMIT),
        "x-request-id": requestId,
        ...(owner === null ? {} : { [OWNER_HEADER]: owner }),
      };
      const call = request(
        { host: "127.0.0.1", port, path: endpoint, method: "POST", headers, agent: this.#agent, signal },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.once("error", reject);
          res.once("end", () => {
            const text = Buffer.concat(chunks).toString("utf8");
            let parsed: unknown = text;
            try {
              parsed = JSON.parse(text);
            } catch {
              // Not JSON: kept as the text it was.
            }
            const id = res.headers["x-request-id"];
            resolve({ status: res.statusCode ?? 0, requestId: typeof id === "string" ? id : requestId, body: parsed });
          });
        },
      );
      call.once("error", reject);
      call.end(payload);
    });

  async close(): Promise<void> {
    this.#agent.destroy();
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }
}
