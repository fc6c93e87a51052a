import { type Logger, lazyChild, type RequestTrace, type Tracing } from "../../observability/index.js";
import { ArmatureError } from "../../protocol/index.js";
import type { Router } from "../../router/index.js";
import type { RequestGrant } from "../access/index.js";
import type { FrontendMetrics, RequestOutcome, RequestTimer } from "../frontend-metrics.js";
import { type Generation, type GenerationEnd, startGeneration, traceOutcome } from "../generation.js";
import { toHttpError } from "../http-errors.js";
import type { ModelPipeline, ModelPipelines } from "../model-pipelines.js";
import { refuseIfSurelyTooLong } from "../prompt-bound.js";
import { startRequestDeadline } from "../request-deadline.js";
import { requestBudgetMs, requestPriority } from "../request-scheduling.js";
import type { LlmRequest } from "./llm-request.js";

/** What a KServe route needs from the frontend: the same pieces the OpenAI routes use. */
export interface KserveDeps {
  readonly router: Router;
  readonly pipelines: ModelPipelines;
  readonly metrics: FrontendMetrics;
  readonly logger: Logger;
  readonly bodyLimitBytes: number;
  /** The request's deadline from arrival (`--request-timeout`); undefined: none. */
  readonly requestTimeoutMs?: number | undefined;
  readonly migrationLimit: number;
  /** Where the gRPC calls' spans go (`--otlp-endpoint`); absent: not exported. */
  readonly tracing?: Tracing | undefined;
}

export interface LlmRunOptions {
  readonly endpoint: RequestOutcome["endpoint"];
  readonly requestId: string;
  /** The key's grant (which models, where tokens are charged); absent without API keys. */
  readonly access?: RequestGrant | undefined;
  /** Aborted when the client goes away. */
  readonly signal: AbortSignal;
  /** The call's trace (under the client's `traceparent` metadata when it sent a valid one). */
  readonly trace?: RequestTrace | undefined;
  /**
   * The call's `x-armature-priority` and `x-armature-deadline-ms` (gRPC metadata), as the HTTP
   * routes read them from headers. Absent: none.
   */
  readonly scheduling?: Readonly<Record<string, string | string[] | undefined>> | undefined;
  /** Called when the deadline passes, after the generation was cancelled. */
  readonly onDeadline?: (() => void) | undefined;
  /** Reads and checks the request; its errors are counted like any other. */
  parse(): LlmRequest | Promise<LlmRequest>;
  /** Sends the generation to the client; resolves with its end, or undefined when it was cut short. */
  respond(request: LlmRequest, generation: Generation): Promise<GenerationEnd | undefined>;
}

/**
 * One KServe gRPC request from arrival to its last response, as the HTTP routes' flow
 * (`routes/generation-flow.ts`, which the REST routes use) runs theirs: the
 * deadline (`--request-timeout`), the key's model check and token charge, tokenizing with the
 * model's pipeline, routing (`startGeneration`), and the request metrics. Throws what went wrong
 * before or during the response; the caller turns it into its protocol's error.
 */
export async function runLlmRequest(deps: KserveDeps, options: LlmRunOptions): Promise<void> {
  const log = lazyChild(deps.logger, { requestId: options.requestId, endpoint: options.endpoint });
  const arrivedAt = performance.now();
  const controller = new AbortController();
  const onAbort = (): void => controller.abort(options.signal.reason);
  if (options.signal.aborted) onAbort();
  else options.signal.addEventListener("abort", onAbort, { once: true });
  let timeoutMs: number | undefined;
  let deadline: NodeJS.Timeout | undefined;
  let timer: RequestTimer | undefined;
  let streaming = false;
  try {
    timeoutMs = requestBudgetMs(options.scheduling ?? {}, deps.requestTimeoutMs);
    deadline = startRequestDeadline(controller, timeoutMs, log, options.onDeadline);
    const request = await options.parse();
    streaming = request.streaming;
    options.access?.checkModel(request.model);
    options.trace?.begin({
      "armature.request_id": options.requestId,
      "armature.endpoint": options.endpoint,
      "gen_ai.request.model": request.model,
    });
    const pipeline = await deps.pipelines.get(request.model);
    timer = deps.metrics.startRequest(pipeline.card.name, arrivedAt);
    const tokenIds = await promptTokens(request, pipeline);
    const priority = requestPriority(options.scheduling ?? {}, request.params.priority, options.access);
    const generation = await startGeneration(deps.router, {
      priority,
      pipeline,
      tokenIds,
      params: request.params,
      signal: controller.signal,
      timeoutMs: timeoutMs === undefined ? undefined : Math.max(0, timeoutMs - (performance.now() - arrivedAt)),
      observer: timer,
      migrationLimit: deps.migrationLimit,
      trace: options.trace,
      onMigrate: (from, to, generated) => {
        deps.metrics.migrations.inc({ model: request.model });
        log.warn({ from, to, generated }, "worker failed mid-stream; request moved to another worker");
      },
    });
    log.debug({ model: request.model, workerId: generation.workerId, promptTokens: tokenIds.length }, "routed");
    const end = await options.respond(request, generation);
    const reason: unknown = controller.signal.reason;
    if (!end && reason instanceof ArmatureError && reason.code === "REQUEST_TIMEOUT") throw reason;
    const usage = end?.usage;
    // A response cut short has no usage: its prompt was still processed, so it is charged.
    options.access?.recordUsage(usage?.prompt_tokens ?? tokenIds.length, usage?.completion_tokens ?? 0);
    timer.finish({
      endpoint: options.endpoint,
      requestType: streaming ? "stream" : "unary",
      status: usage ? "success" : "error",
      errorType: usage ? undefined : controller.signal.aborted ? "cancelled" : "internal",
      inputTokens: tokenIds.length,
      outputTokens: usage?.completion_tokens,
      cachedTokens: usage?.prompt_tokens_details.cached_tokens,
      hostCachedTokens: end?.hostCachedTokens,
    });
    options.trace?.finished(traceOutcome(end, controller.signal.reason));
  } catch (error) {
    const http = toHttpError(error);
    options.trace?.begin({ "armature.request_id": options.requestId, "armature.endpoint": options.endpoint });
    options.trace?.finished({ status: http.status, error });
    if (http.status >= 500) log.error({ err: error }, "request failed");
    else log.info({ status: http.status, message: http.body.error.message }, "request rejected");
    (timer ?? deps.metrics.startRequest("unknown")).finish({
      endpoint: options.endpoint,
      requestType: streaming ? "stream" : "unary",
      status: "error",
      errorType: http.errorType,
    });
    throw error;
  } finally {
    clearTimeout(deadline);
    options.signal.removeEventListener("abort", onAbort);
  }
}

/** `text_input`'s tokens, as `/v1/completions` tokenizes a string prompt; a surely too long one is refused first. */
export function promptTokens(request: LlmRequest, pipeline: ModelPipeline): Promise<number[]> {
  refuseIfSurelyTooLong([request.textInput], pipeline, "text_input");
  return pipeline.tokenizeAsync(request.textInput);
}

/** The text and finish reason of a whole generation, for the responses that are not streamed. */
export async function collectText(generation: Generation): Promise<{ text: string; end: GenerationEnd } | undefined> {
  let text = "";
  for await (const event of generation.events) {
    if (event.type === "text") text += event.text;
    else return { text, end: event };
  }
  return undefined;
}
