import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer, type Server as HttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import {
  type Logger,
  lazyChild,
  type MetricMeter,
  noTracing,
  RequestTrace,
  type Tracing,
  traceContextFromHeaders,
} from "../observability/index.js";
import { ArmatureError } from "../protocol/index.js";
import type { KvIndexer, Router } from "../router/index.js";
import type { InvalidMessages } from "../runtime/index.js";
import { type AccessControl, sendAccessDenial } from "./access/index.js";
import { ANTHROPIC_PATHS, handleCountTokens, handleMessages, sendAnthropicDenial } from "./anthropic/index.js";
import { BatchLoopback } from "./batches/batch-loopback.js";
import { handleBatchRoute, isBatchPath } from "./batches/batch-routes.js";
import { BatchRunner } from "./batches/batch-runner.js";
import type { BatchStore } from "./batches/batch-store.js";
import { DirectoryBatchStore } from "./batches/directory-batch-store.js";
import { answerClientError } from "./client-errors.js";
import { Dashboard, type FleetBatch } from "./dashboard/index.js";
import { type FinishedRequestTimings, FrontendMetrics, type RunningRequestListener } from "./frontend-metrics.js";
import { toHttpError } from "./http-errors.js";
import { sendJson } from "./http-io.js";
import { handleKserveRest, isKservePath, type KserveDeps, KserveGrpcServer, sendKserveDenial } from "./kserve/index.js";
import { ModelPipelines } from "./model-pipelines.js";
import { handleCompletions } from "./openai/index.js";
import type { ReasoningParserName } from "./reasoning/index.js";
import { handleResponses } from "./responses/index.js";
import { handleEmbeddings } from "./routes/embeddings-route.js";
import { handleHealth, handleLive, handleMetrics, handleModel, handleModels } from "./routes/info-routes.js";
import { handleLoraAdmin } from "./routes/lora-routes.js";
import { handleRerank, handleScore, RANKING_PATHS } from "./routes/ranking-routes.js";
import { handleDetokenize, handleTokenize } from "./routes/tokenize-routes.js";
import { RuntimeAdapters } from "./runtime-adapters.js";
import { tokenizerFetcher } from "./tokenizer-fetch.js";
import type { ToolCallParserName } from "./tool-calls/index.js";

export interface FrontendOptions {
  readonly router: Router;
  /** The KV router's index, whose applied-event counts `/metrics` reports. */
  readonly kvIndexer?: KvIndexer | undefined;
  /** Malformed plane messages dropped, which `/metrics` reports by kind. */
  readonly invalidMessages?: InvalidMessages | undefined;
  readonly meter: MetricMeter;
  readonly logger: Logger;
  /** API keys and their quotas (docs/security.md); absent, the API serves anyone who reaches it. */
  readonly access?: AccessControl | undefined;
  readonly host?: string;
  /** 0 picks a free port. Default 8000. */
  readonly port?: number;
  /** Times a request may move to another worker when its worker fails mid-stream. Default 3. */
  readonly migrationLimit?: number;
  /** Largest accepted request body; larger ones get 413. Default 8 MiB. */
  readonly bodyLimitBytes?: number;
  /** How long a request may take, from arrival, before it is cancelled (504). Default: no deadline. */
  readonly requestTimeoutMs?: number | undefined;
  /** Serve HTTPS on `port` with these credentials. Default: plain HTTP. */
  readonly tls?: TlsOptions | undefined;
  /** The planner's state for `GET /v1/planner`, when a planner sizes this deployment. */
  readonly plannerState?: (() => unknown) | undefined;
  /** Names this frontend in every response (`x-armature-frontend`), e.g. one of several processes on a port. */
  readonly instanceId?: string | undefined;
  /** Hears every request as it ends, with its latencies (the planner's traffic window). */
  readonly onRequestFinished?: ((request: FinishedRequestTimings) => void) | undefined;
  /** Follows each request while it runs (a planner in this process reads its live latencies). */
  readonly onRequestStarted?: ((startedAt: number, model: string) => RunningRequestListener | undefined) | undefined;
  /**
   * Where request spans go (`--otlp-endpoint`). Every response carries its trace id in
   * `x-armature-trace-id` either way: the client's from `traceparent`, else a new one.
   */
  readonly tracing?: Tracing | undefined;
  /** Serve KServe v2's gRPC API on this port too (on `host`, with `tls`). Default: no gRPC. */
  readonly grpcPort?: number | undefined;
  /** `--tool-call-parser`: reads `tool_choice: "auto"` answers. Default: the parser each model's chat template points to. */
  readonly toolCallParser?: ToolCallParserName | undefined;
  /** `--reasoning-parser`: splits chat answers' `<think>` text into `reasoning_content`. Default: none. */
  readonly reasoningParser?: ReasoningParserName | undefined;
  /**
   * The Files and Batch APIs: where their state lives (`--batch-dir`), how many batch requests run
   * at once (`--batch-concurrency`) and the largest upload (`--batch-max-file-bytes`). Absent: off.
   */
  readonly batches?: BatchOptions | undefined;
}

export interface BatchOptions {
  /** Where files and batches live: a folder (`--batch-dir`), or a store given whole (an object store's). */
  readonly place: { readonly dir: string } | { readonly store: BatchStore };
  readonly concurrency: number;
  readonly maxFileBytes: number;
}

/** HTTPS credentials as PEM text; where they come from (files, a secret store) is the caller's business. */
export interface TlsOptions {
  /** The server's certificate, followed by any intermediates. */
  readonly cert: string;
  /** The unencrypted private key of `cert`. */
  readonly key: string;
  /**
   * CA certificates that client certificates must chain to. Given, every client must present a
   * certificate (mutual TLS): a connection without one, or with one that does not verify, is refused
   * in the TLS handshake, before any HTTP. Default: no client certificates asked for.
   */
  readonly clientCa?: string | undefined;
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** `GET /v1/models/{id}`: the id is the rest of the path, URL-decoded, and may hold `/`. */
const MODEL_PATH_PREFIX = "/v1/models/";

/** The OpenAI-compatible HTTP server. */
export class Frontend {
  readonly #server: Server | HttpsServer;
  readonly #o: FrontendOptions;
  readonly #metrics: FrontendMetrics;
  readonly #pipelines: ModelPipelines;
  readonly #log: Logger;
  readonly #inflight = new Set<Promise<void>>();
  readonly #startedAt = Date.now();
  #grpc: KserveGrpcServer | undefined;
  readonly #dashboard: Dashboard;
  readonly #runtimeAdapters: RuntimeAdapters;
  #batches: { store: BatchStore; runner: BatchRunner; loopback: BatchLoopback } | undefined;

  private constructor(options: FrontendOptions) {
    this.#o = options;
    this.#log = options.logger.child({ component: "frontend" });
    this.#dashboard = new Dashboard(options.meter);
    const window = this.#dashboard.window;
    this.#metrics = new FrontendMetrics(
      options.meter,
      (request) => {
        window.recordFinished(request);
        options.onRequestFinished?.(request);
      },
      (decision) => window.recordRouted(decision),
      options.onRequestStarted,
    );
    const runtime = options.router.runtime;
    this.#pipelines = new ModelPipelines(options.router.workers, tokenizerFetcher(runtime.requests, runtime.invalidMessages));
    this.#runtimeAdapters = new RuntimeAdapters(options.router, this.#log);
    this.#server = options.tls
      ? createTlsServer(options.tls, (req, res) => this.#handle(req, res), this.#log)
      : createServer((req, res) => this.#handle(req, res));
    this.#server.keepAliveTimeout = 65_000;
    this.#server.on("clientError", answerClientError);
  }

  /** Serves one request; `batch` when it comes from the batch runner, for the batch's owner. */
  #handle(req: IncomingMessage, res: ServerResponse, batch?: { owner: string | null }): void {
    const handling = this.#dispatch(req, res, batch).catch((error: unknown) => {
      this.#log.error({ err: error }, "unhandled error in request handler");
      if (!res.headersSent) sendJson(res, 500, toHttpError(error).body);
      else res.destroy();
    });
    this.#inflight.add(handling);
    void handling.finally(() => this.#inflight.delete(handling));
  }

  /** Starts listening; resolves with the frontend once the port is bound. */
  static async create(options: FrontendOptions): Promise<Frontend> {
    const frontend = new Frontend(options);
    await new Promise<void>((resolve, reject) => {
      frontend.#server.once("error", (error: NodeJS.ErrnoException) => {
        const where = `${options.host ?? "127.0.0.1"}:${options.port ?? 8000}`;
        reject(
          error.code === "EADDRINUSE" || error.code === "EACCES" || error.code === "EADDRNOTAVAIL"
            ? new ArmatureError("LISTEN_FAILED", `cannot listen on ${where}: ${error.code}`, { cause: error })
            : error,
        );
      });
      frontend.#server.listen(options.port ?? 8000, options.host ?? "127.0.0.1", () => {
        frontend.#server.removeAllListeners("error");
        frontend.#server.on("error", (error) => frontend.#log.error({ err: error }, "HTTP server error"));
        resolve();
      });
    });
    if (options.batches) {
      try {
        await frontend.#startBatches(options.batches);
      } catch (error) {
        await frontend.close(0);
        throw error;
      }
    }
    if (options.grpcPort !== undefined) {
      try {
        frontend.#grpc = await KserveGrpcServer.create({
          host: options.host ?? "127.0.0.1",
          port: options.grpcPort,
          deps: frontend.#generationDeps(),
          access: options.access,
          tls: options.tls,
          logger: frontend.#log,
        });
      } catch (error) {
        await frontend.close(0);
        throw new ArmatureError(
          "CONFIG_INVALID",
          `${(error as Error).message}; choose another port with --grpc-port (ARMATURE_GRPC_PORT)`,
          { cause: error },
        );
      }
    }
    return frontend;
  }

  /** The bound address, e.g. `http://127.0.0.1:8000`, or `https://…` with `tls`. */
  get url(): string {
    const address = this.#server.address() as AddressInfo;
    const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
    return `${this.#o.tls ? "https" : "http"}://${host}:${address.port}`;
  }

  /**
   * Serves `tls` to connections made from now on (certificate rotation without a restart); open
   * connections keep the credentials they were made with. Throws `CONFIG_INVALID`, keeping the
   * credentials in force, for a frontend started without `tls`, for turning mutual TLS on or off
   * (that needs a restart), or for PEM that does not form credentials (a key that does not match).
   */
  replaceTlsCredentials(tls: TlsOptions): void {
    const started = this.#o.tls;
    if (!started || !("setSecureContext" in this.#server)) {
      throw new ArmatureError("CONFIG_INVALID", "this frontend serves plain HTTP; start it with TLS credentials to rotate them");
    }
    if ((started.clientCa === undefined) !== (tls.clientCa === undefined)) {
      throw new ArmatureError("CONFIG_INVALID", "client certificates cannot be turned on or off while serving; restart instead");
    }
    try {
      this.#server.setSecureContext(secureContextOptions(tls));
    } catch (cause) {
      throw new ArmatureError("CONFIG_INVALID", `TLS credentials refused: ${(cause as Error).message}`, { cause });
    }
  }

  get inflightRequests(): number {
    return this.#inflight.size;
  }

  async #dispatch(req: IncomingMessage, res: ServerResponse, batch?: { owner: string | null }): Promise<void> {
    const incoming = req.headers["x-request-id"];
    const requestId = typeof incoming === "string" && REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const headers = { "x-request-id": requestId };
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const route = `${req.method} ${path}`;
    // Cohere's `/v2/rerank` shares KServe's `/v2` prefix.
    const kserve = isKservePath(path) && path !== "/v2/rerank";
    const trace = new RequestTrace(this.#o.tracing ?? noTracing, traceContextFromHeaders(req.headers));
    res.setHeader("x-armature-trace-id", trace.traceId);
    if (this.#o.instanceId) res.setHeader("x-armature-frontend", this.#o.instanceId);
    const access = batch ? this.#o.access?.grantByName(batch.owner ?? "", res) : this.#o.access?.check(req, res, path);
    if (access?.kind === "denied") {
      if (ANTHROPIC_PATHS.includes(path)) return sendAnthropicDenial(req, res, access.denial, headers);
      if (kserve) return sendKserveDenial(req, res, access.denial, headers);
      return sendAccessDenial(req, res, access.denial, headers);
    }
    const grant = access?.kind === "granted" ? access.grant : undefined;
    const deps = {
      router: this.#o.router,
      pipelines: this.#pipelines,
      metrics: this.#metrics,
      logger: lazyChild(this.#log, grant ? { keyName: grant.keyName, traceId: trace.traceId } : { traceId: trace.traceId }),
      trace,
      access: grant,
      bodyLimitBytes: this.#o.bodyLimitBytes ?? 8 * 1024 * 1024,
      requestTimeoutMs: this.#o.requestTimeoutMs,
      migrationLimit: this.#o.migrationLimit ?? 3,
      toolCallParser: this.#o.toolCallParser,
      reasoningParser: this.#o.reasoningParser,
    };
    if (req.method === "GET" && Dashboard.servesPath(path)) return this.#dashboard.serveFile(res, path, headers);
    if (isBatchPath(path) && !batch) {
      if (!this.#batches) {
        req.resume();
        const off = new ArmatureError(
          "RESOURCE_NOT_FOUND",
          `the Files and Batch APIs are off on this frontend (--batch-dir off)`,
        );
        return sendJson(res, 404, toHttpError(off).body, headers);
      }
      return handleBatchRoute(req, res, path, headers, {
        store: this.#batches.store,
        runner: this.#batches.runner,
        maxFileBytes: this.#o.batches?.maxFileBytes ?? 0,
        bodyLimitBytes: deps.bodyLimitBytes,
        owner: grant?.keyName ?? null,
        log: deps.logger,
      });
    }
    if (kserve) return handleKserveRest(req, res, path, requestId, deps);
    if (req.method === "GET" && path.startsWith(MODEL_PATH_PREFIX)) {
      const id = decodePathPart(path.slice(MODEL_PATH_PREFIX.length));
      if (id !== undefined) return handleModel(res, this.#o.router, this.#startedAt, id, headers, grant);
      const http = toHttpError(new ArmatureError("REQUEST_INVALID", "the model id in the path is not valid percent-encoding"));
      return sendJson(res, 400, http.body, headers);
    }
    switch (route) {
      case "POST /v1/chat/completions":
        return handleCompletions("chat", req, res, requestId, deps);
      case "POST /v1/completions":
        return handleCompletions("text", req, res, requestId, deps);
      case "POST /v1/messages":
        return handleMessages(req, res, requestId, deps);
      case "POST /v1/messages/count_tokens":
        return handleCountTokens(req, res, requestId, deps);
      case "POST /v1/responses":
        return handleResponses(req, res, requestId, deps);
      case "POST /v1/embeddings":
        return handleEmbeddings(req, res, requestId, deps);
      case "POST /v1/rerank":
      case "POST /v2/rerank":
      case "POST /rerank":
        return handleRerank(req, res, requestId, deps);
      case "POST /v1/score":
      case "POST /score":
        return handleScore(req, res, requestId, deps);
      case "POST /tokenize":
        return handleTokenize(req, res, requestId, deps);
      case "POST /detokenize":
        return handleDetokenize(req, res, requestId, deps);
      case "POST /v1/load_lora_adapter":
        return handleLoraAdmin("load", req, res, headers, { ...deps, runtimeAdapters: this.#runtimeAdapters });
      case "POST /v1/unload_lora_adapter":
        return handleLoraAdmin("unload", req, res, headers, { ...deps, runtimeAdapters: this.#runtimeAdapters });
      case "GET /v1/models":
        return handleModels(res, this.#o.router, this.#startedAt, headers, grant);
      case "GET /health":
        return handleHealth(res, this.#o.router, headers, this.#grpc ? { grpc_port: this.#grpc.port } : {});
      case "GET /live":
        return handleLive(res, headers);
      case "GET /v1/planner":
        return this.#o.plannerState
          ? sendJson(res, 200, this.#o.plannerState(), headers)
          : sendJson(
              res,
              404,
              toHttpError(
                new ArmatureError(
                  "REQUEST_INVALID",
                  "no planner sizes this deployment: start it with --planner load or --planner sla",
                ),
              ).body,
              headers,
            );
      case "GET /v1/fleet":
        return this.#dashboard.serveFleet(
          res,
          {
            router: this.#o.router,
            kvIndexer: this.#o.kvIndexer,
            plannerState: this.#o.plannerState,
            batches: this.#batches ? () => this.#recentBatches(grant?.keyName ?? null) : undefined,
            startedAt: this.#startedAt,
            requestsInFlight: this.#inflight.size,
          },
          headers,
          grant,
        );
      case "GET /metrics":
        if (this.#o.kvIndexer) this.#metrics.refreshKvEvents(this.#o.kvIndexer.applied);
        if (this.#o.invalidMessages) this.#metrics.refreshInvalidMessages(this.#o.invalidMessages.counts);
        this.#metrics.setQueuePending(this.#o.router.queuedRequests);
        return handleMetrics(res, this.#o.meter, this.#metrics, this.#o.router, headers);
      default: {
        const known =
          [
            "/v1/chat/completions",
            "/v1/completions",
            "/v1/embeddings",
            ...RANKING_PATHS,
            ...ANTHROPIC_PATHS,
            "/v1/responses",
            "/v1/models",
            "/v1/planner",
            "/health",
            "/live",
            "/metrics",
            "/tokenize",
            "/detokenize",
            "/v1/fleet",
            "/v1/load_lora_adapter",
            "/v1/unload_lora_adapter",
          ].includes(path) ||
          path.startsWith(MODEL_PATH_PREFIX) ||
          Dashboard.servesPath(path);
        const error = new ArmatureError(
          "REQUEST_INVALID",
          known ? `method ${req.method} is not allowed on ${path}` : `no route ${path}`,
        );
        const http = toHttpError(error);
        req.resume();
        sendJson(res, known ? 405 : 404, http.body, headers);
      }
    }
  }

  /** The owner's 10 newest batches, for the dashboard. */
  async #recentBatches(owner: string | null): Promise<FleetBatch[]> {
    const stored = (await this.#batches?.store.listBatches()) ?? [];
    return stored
      .filter((b) => b.owner === owner)
      .slice(0, 10)
      .map(({ batch }) => ({
        id: batch.id,
        status: batch.status,
        endpoint: batch.endpoint,
        createdAt: batch.created_at,
        ...batch.request_counts,
      }));
  }

  async #startBatches(options: BatchOptions): Promise<void> {
    const store = "store" in options.place ? options.place.store : await DirectoryBatchStore.open(options.place.dir);
    const loopback = await BatchLoopback.start((req, res, owner) => this.#handle(req, res, { owner }));
    const runner = new BatchRunner({ store, send: loopback.send, concurrency: options.concurrency, logger: this.#log });
    this.#batches = { store, runner, loopback };
    await runner.start();
  }

  /** The KServe gRPC port, when `grpcPort` was given. */
  get grpcPort(): number | undefined {
    return this.#grpc?.port;
  }

  #generationDeps(): KserveDeps {
    return {
      router: this.#o.router,
      pipelines: this.#pipelines,
      metrics: this.#metrics,
      logger: this.#log,
      bodyLimitBytes: this.#o.bodyLimitBytes ?? 8 * 1024 * 1024,
      requestTimeoutMs: this.#o.requestTimeoutMs,
      migrationLimit: this.#o.migrationLimit ?? 3,
      tracing: this.#o.tracing,
    };
  }

  /**
   * Stops accepting connections (and gRPC calls), waits up to `graceMs` for in-flight requests,
   * then closes the rest.
   */
  async close(graceMs = 30_000): Promise<void> {
    this.#runtimeAdapters.close();
    // Batch requests in flight are cut off first: their batches resume at the next start.
    await this.#batches?.runner.close();
    await this.#batches?.loopback.close();
    const grpcClosed = this.#grpc?.close(graceMs);
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeIdleConnections();
    const grace = new Promise<void>((resolve) => setTimeout(resolve, graceMs).unref());
    await Promise.race([Promise.all(this.#inflight), grace]);
    this.#server.closeAllConnections();
    await closed;
    await grpcClosed;
    await this.#batches?.store.close();
  }
}

function decodePathPart(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

function secureContextOptions(tls: TlsOptions): { cert: string; key: string; ca?: string } {
  return tls.clientCa === undefined ? { cert: tls.cert, key: tls.key } : { cert: tls.cert, key: tls.key, ca: tls.clientCa };
}

function createTlsServer(tls: TlsOptions, handle: (req: IncomingMessage, res: ServerResponse) => void, log: Logger): HttpsServer {
  const mutual = tls.clientCa !== undefined;
  const server = createHttpsServer({ ...secureContextOptions(tls), requestCert: mutual, rejectUnauthorized: mutual }, handle);
  // Plain HTTP on this port, an untrusted client certificate, a scanner: the socket is closed
  // either way; a debug line says why a client could not connect.
  server.on("tlsClientError", (error, socket) => {
    log.debug({ err: error, remoteAddress: socket.remoteAddress }, "TLS handshake refused");
  });
  return server;
}
