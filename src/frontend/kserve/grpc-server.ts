import { fileURLToPath } from "node:url";
import { type Metadata, Server, ServerCredentials, type ServiceDefinition, setLogger } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import type { Logger } from "../../observability/index.js";
import { ArmatureError } from "../../protocol/index.js";
import type { AccessControl } from "../access/index.js";
import { type CallAdmission, grpcHandlers } from "./grpc-handlers.js";
import { grpcDenial } from "./grpc-status.js";
import type { KserveDeps } from "./llm-run.js";

/** The service's proto: the Open Inference Protocol's, with Triton's ModelStreamInfer (protos/README.md). */
export const KSERVE_PROTO_PATH = fileURLToPath(new URL("./protos/open_inference_grpc.proto", import.meta.url));

/** How the server loads the proto; the handlers read messages in this form (grpc-tensors.ts). */
export const KSERVE_PROTO_OPTIONS = { keepCase: true, longs: Number, enums: String, defaults: true, oneofs: true } as const;

export interface KserveGrpcOptions {
  readonly host: string;
  /** A free port is picked for 0 (tests); `--grpc-port 0` means no server and never reaches here. */
  readonly port: number;
  readonly deps: KserveDeps;
  readonly access?: AccessControl | undefined;
  /** The HTTP port's TLS credentials, served on this port too (read once, at start). */
  readonly tls?: { readonly cert: string; readonly key: string; readonly clientCa?: string | undefined } | undefined;
  readonly logger: Logger;
}

/**
 * KServe v2's gRPC API (`inference.GRPCInferenceService`) beside the HTTP frontend, on its own
 * port (`--grpc-port`). Serves the same models through the same generation path, API keys
 * (`authorization: Bearer KEY` metadata), deadlines and metrics as the REST routes.
 */
export class KserveGrpcServer {
  readonly #server: Server;
  readonly #port: number;
  readonly #shutdown: AbortController;

  private constructor(server: Server, port: number, shutdown: AbortController) {
    this.#server = server;
    this.#port = port;
    this.#shutdown = shutdown;
  }

  /** Binds the port; throws `LISTEN_FAILED` naming it when that fails. */
  static async create(options: KserveGrpcOptions): Promise<KserveGrpcServer> {
    // grpc-js writes its own errors to the console; they go to this server's log instead (a
    // failed bind, for one, is reported as LISTEN_FAILED below).
    const grpcLog = options.logger.child({ component: "grpc-js" });
    setLogger({ error: (...args: unknown[]) => grpcLog.debug(args.map(String).join(" ")) });
    const definition = loadSync(KSERVE_PROTO_PATH, KSERVE_PROTO_OPTIONS);
    const service = definition["inference.GRPCInferenceService"] as ServiceDefinition;
    const server = new Server({
      "grpc.max_receive_message_length": options.deps.bodyLimitBytes,
    });
    const shutdown = new AbortController();
    const access = options.access;
    const admit = (metadata: Metadata, generation: boolean): CallAdmission => {
      if (!access) return { kind: "granted", grant: undefined, end: () => {} };
      const decision = access.admitKey(presentedKey(metadata), generation);
      return decision.kind === "granted" ? decision : { kind: "denied", error: grpcDenial(decision.denial) };
    };
    const deps = { ...options.deps, logger: options.logger };
    server.addService(service, grpcHandlers({ deps, admit, shutdown: shutdown.signal }) as never);
    const host = options.host.includes(":") ? `[${options.host}]` : options.host;
    const port = await new Promise<number>((resolve, reject) => {
      server.bindAsync(`${host}:${options.port}`, credentials(options.tls), (error, bound) => {
        if (error) {
          reject(
            new ArmatureError("LISTEN_FAILED", `cannot listen for gRPC on ${host}:${options.port}: ${error.message}`, {
              cause: error,
            }),
          );
        } else resolve(bound);
      });
    });
    options.logger.child({ component: "kserve-grpc" }).info({ port }, "KServe v2 gRPC listening");
    return new KserveGrpcServer(server, port, shutdown);
  }

  /** The bound port. */
  get port(): number {
    return this.#port;
  }

  /** Stops taking calls, lets those in flight finish for up to `graceMs`, then cancels the rest. */
  async close(graceMs = 30_000): Promise<void> {
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        this.#shutdown.abort(new ArmatureError("REQUEST_CANCELLED", "the server is shutting down"));
        this.#server.forceShutdown();
        resolve();
      }, graceMs);
      force.unref();
      this.#server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
  }
}

function credentials(tls: KserveGrpcOptions["tls"]): ServerCredentials {
  if (!tls) return ServerCredentials.createInsecure();
  const ca = tls.clientCa === undefined ? null : Buffer.from(tls.clientCa);
  return ServerCredentials.createSsl(
    ca,
    [{ cert_chain: Buffer.from(tls.cert), private_key: Buffer.from(tls.key) }],
    tls.clientCa !== undefined,
  );
}

/** `authorization: Bearer KEY` first, else `x-api-key: KEY`, as the HTTP routes read them. */
function presentedKey(metadata: Metadata): string | undefined {
  const [authorization] = metadata.get("authorization");
  if (typeof authorization === "string") {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    return match?.[1] ?? authorization;
  }
  const [key] = metadata.get("x-api-key");
  return typeof key === "string" && key !== "" ? key : undefined;
}
