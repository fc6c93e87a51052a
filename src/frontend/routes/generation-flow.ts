import type { IncomingMessage, ServerResponse } from "node:http";
import { type Logger, lazyChild, type RequestTrace } from "../../observability/index.js";
import { ArmatureError } from "../../protocol/index.js";
import type { Router } from "../../router/index.js";
import type { RequestGrant } from "../access/index.js";
import type { FrontendMetrics, RequestOutcome, RequestTimer } from "../frontend-metrics.js";
import { type Generation, type GenerationEnd, type GenerationInput, startGeneration, traceOutcome } from "../generation.js";
import { type HttpError, toHttpError } from "../http-errors.js";
import { lingerThenClose, readJsonBody, sendJson } from "../http-io.js";
import type { ModelPipeline, ModelPipelines } from "../model-pipelines.js";
import type { ReasoningParserName } from "../reasoning/index.js";
import { startRequestDeadline } from "../request-deadline.js";
import { requestBudgetMs, requestPriority } from "../request-scheduling.js";
import type { CommonParams } from "../requests/common-params.js";
import type { ToolCallParserName } from "../tool-calls/index.js";

/** What a generating route needs from the server. */
export interface GenerationRouteDeps {
  readonly router: Router;
  readonly pipelines: ModelPipelines;
  readonly metrics: FrontendMetrics;
  readonly logger: Logger;
  readonly bodyLimitBytes: number;
  /** The request's deadline from arrival (`--request-timeout`); undefined: none. */
  readonly requestTimeoutMs?: number | undefined;
  readonly migrationLimit: number;
  /** The API key's grant: which models it may use, where its tokens are charged. Absent without keys. */
  readonly access?: RequestGrant | undefined;
  /** The request's trace (its id is already in the response headers). */
  readonly trace?: RequestTrace | undefined;
  /** `--tool-call-parser`: how `tool_choice: "auto"` answers are read; absent, the chat template tells. */
  readonly toolCallParser?: ToolCallParserName | undefined;
  /** `--reasoning-parser`: splits chat answers into `reasoning_content` and content. Absent: no split. */
  readonly reasoningParser?: ReasoningParserName | undefined;
}

/** A prompt ready to generate from: its tokens and the parameters to generate with. */
export interface PreparedPrompt {
  readonly tokenIds: number[];
  readonly params: CommonParams;
}

/** Where a route writes its answer. */
export interface Reply {
  readonly res: ServerResponse;
  /** `x-request-id` and the `x-armature-*` routing headers. */
  readonly headers: Record<string, string>;
  readonly requestId: string;
  readonly log: Logger;
}

/**
 * One API's side of a generating route (OpenAI's chat and legacy completions and Responses,
 * Anthropic's Messages, KServe's infer and generate): how it reads
 * a body, renders its prompt, answers and reports errors. The flow around it (deadline, client
 * disconnect, API-key model check and usage, metrics, routing) is `serveGeneration`'s.
 */
export interface GenerationApi<
  Request extends { readonly params: CommonParams },
  Prepared extends PreparedPrompt = PreparedPrompt,
> {
  readonly endpoint: RequestOutcome["endpoint"];
  /** Validates the body; throws a 400 naming the field. */
  parse(raw: unknown): Request;
  /**
   * The prompt's tokens (through the model's chat template) and the parameters to generate with
   * on this model (the request's, or with a constraint its tools need), with whatever else the
   * API's answer needs to know of them.
   */
  prepare(request: Request, pipeline: ModelPipeline): Prepared | Promise<Prepared>;
  /**
   * Starts generating; resolves once the first worker answered. Default: one generation of the
   * prepared prompt (the completion routes start several for `n` and prompt batches).
   */
  start?(prepared: Prepared, input: GenerationInput, router: Router): Promise<Generation>;
  /** Sends the whole answer or streams it; resolves with the end, or undefined when cut short. */
  respond(request: Request, generation: Generation, reply: Reply, prepared: Prepared): Promise<GenerationEnd | undefined>;
  /** The API's error body for a refusal or a failure before any output. */
  errorBody(http: HttpError, requestId: string): unknown;
  /** Ends a stream that has begun with the API's error event. */
  endStreamWithError(res: ServerResponse, http: HttpError, requestId: string): void;
}

/** How long a response past its deadline may take to send its error before the connection is closed. */
const DEADLINE_GRACE_MS = 5000;

/**
 * Serves one generating request: reads and parses the body, checks the API key's models, routes
 * the prompt to a worker and lets `api` answer; a client that disconnects, or the server's
 * deadline, cancels the generation on the worker. Metrics and the key's usage are recorded as
 * the completion routes record them.
 */
export async function serveGeneration<
  Request extends { readonly params: CommonParams },
  Prepared extends PreparedPrompt = PreparedPrompt,
>(
  api: GenerationApi<Request, Prepared>,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  deps: GenerationRouteDeps,
): Promise<void> {
  const endpoint = api.endpoint;
  const log = lazyChild(deps.logger, { requestId, endpoint });
  const baseHeaders: Record<string, string> = { "x-request-id": requestId };
  let timer: RequestTimer | undefined;
  let stream = false;
  const controller = new AbortController();
  const arrivedAt = performance.now();
  let timeoutMs: number | undefined;
  let deadline: NodeJS.Timeout | undefined;
  res.on("close", () => {
    clearTimeout(deadline);
    if (!res.writableFinished) {
      controller.abort(new ArmatureError("REQUEST_CANCELLED", "client disconnected"));
      deps.metrics.disconnected.inc();
      log.info("client disconnected; generation cancelled");
    }
  });
  try {
    timeoutMs = requestBudgetMs(req.headers, deps.requestTimeoutMs);
    // A client that stopped reading leaves the response waiting for a drain that never comes: after a
    // grace for the error to go out, the connection is closed.
    deadline = startRequestDeadline(controller, timeoutMs, log, () => {
      setTimeout(() => {
        if (!res.writableFinished) res.destroy();
      }, DEADLINE_GRACE_MS).unref();
    });
    const request = api.parse(await readJsonBody(req, deps.bodyLimitBytes));
    const { params } = request;
    deps.access?.checkModel(params.model);
    const priority = requestPriority(req.headers, params.priority, deps.access);
    stream = params.stream;
    deps.trace?.begin({ "armature.request_id": requestId, "armature.endpoint": endpoint, "gen_ai.request.model": params.model });
    const pipeline = await deps.pipelines.get(params.model);
    // An adapter's requests are counted under its name (a served name, as the model's is).
    timer = deps.metrics.startRequest(pipeline.lora ?? pipeline.card.name, arrivedAt);
    const prepared = await api.prepare(request, pipeline);
    const tokenIds = prepared.tokenIds;
    const input: GenerationInput = {
      pipeline,
      tokenIds,
      params: prepared.params,
      signal: controller.signal,
      timeoutMs: timeoutMs === undefined ? undefined : Math.max(0, timeoutMs - (performance.now() - arrivedAt)),
      priority,
      observer: timer,
      migrationLimit: deps.migrationLimit,
      trace: deps.trace,
      onMigrate: (from, to, generated) => {
        deps.metrics.migrations.inc({ model: params.model });
        log.warn({ from, to, generated }, "worker failed mid-stream; request moved to another worker");
      },
    };
    const generation = await (api.start ? api.start(prepared, input, deps.router) : startGeneration(deps.router, input));
    const headers: Record<string, string> = { ...baseHeaders, "x-armature-worker": generation.workerId };
    if (generation.prefillWorkerId) headers["x-armature-prefill-worker"] = generation.prefillWorkerId;
    if (generation.overlapBlocks !== undefined) {
      headers["x-armature-overlap-blocks"] = String(generation.overlapBlocks);
      deps.metrics.observeKvHit(params.model, (generation.overlapBlocks * pipeline.card.blockSize) / tokenIds.length);
    }
    log.debug({ model: params.model, workerId: generation.workerId, promptTokens: tokenIds.length }, "routed");
    const end = await api.respond(request, generation, { res, headers, requestId, log }, prepared);
    // Cut short by the deadline: say so (504, or an error event on a stream that has begun).
    if (!end && isTimeout(controller.signal.reason)) throw controller.signal.reason;
    const usage = end?.usage;
    // A response cut short has no usage: its prompt was still processed, so it is charged.
    deps.access?.recordUsage(usage?.prompt_tokens ?? tokenIds.length, usage?.completion_tokens ?? 0);
    timer.finish({
      endpoint,
      requestType: stream ? "stream" : "unary",
      status: usage ? "success" : "error",
      errorType: usage ? undefined : controller.signal.aborted ? "cancelled" : "internal",
      inputTokens: tokenIds.length,
      outputTokens: usage?.completion_tokens,
      cachedTokens: usage?.prompt_tokens_details.cached_tokens,
      hostCachedTokens: end?.hostCachedTokens,
    });
    deps.trace?.finished(traceOutcome(end, controller.signal.reason));
  } catch (error) {
    const http = toHttpError(error);
    deps.trace?.begin({ "armature.request_id": requestId, "armature.endpoint": endpoint });
    deps.trace?.finished({ status: http.status, error });
    if (http.status >= 500) log.error({ err: error }, "request failed");
    else log.info({ status: http.status, code: http.body.error.code, message: http.body.error.message }, "request rejected");
    (timer ?? deps.metrics.startRequest("unknown")).finish({
      endpoint,
      requestType: stream ? "stream" : "unary",
      status: "error",
      errorType: http.errorType,
    });
    if (!res.headersSent && !res.destroyed) {
      sendJson(res, http.status, api.errorBody(http, requestId), baseHeaders);
      if (http.status === 413) lingerThenClose(req);
    } else if (stream && !res.writableEnded && !res.destroyed) {
      api.endStreamWithError(res, http, requestId);
    }
  } finally {
    clearTimeout(deadline);
  }
}

function isTimeout(reason: unknown): boolean {
  return reason instanceof ArmatureError && reason.code === "REQUEST_TIMEOUT";
}
