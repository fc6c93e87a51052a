import type { IncomingMessage, ServerResponse } from "node:http";
import { type Logger, lazyChild } from "../../observability/index.js";
import { ArmatureError } from "../../protocol/index.js";
import type { RequestOutcome, RequestTimer } from "../frontend-metrics.js";
import { toHttpError } from "../http-errors.js";
import { lingerThenClose, readJsonBody, sendJson } from "../http-io.js";
import type { ModelPipeline } from "../model-pipelines.js";
import type { GenerationRouteDeps } from "./generation-flow.js";

/** What the pooling routes (embeddings, rerank, score) need from the server: the generating routes' needs, less tools and traces. */
export type PoolingRouteDeps = Pick<
  GenerationRouteDeps,
  "router" | "pipelines" | "metrics" | "logger" | "bodyLimitBytes" | "requestTimeoutMs" | "migrationLimit" | "access"
>;

/** One pooling request as its route sees it once the body is read and the model known. */
export interface PoolingContext {
  readonly pipeline: ModelPipeline;
  readonly signal: AbortSignal;
  /** Time left before the request's deadline, for the worker; undefined: none. */
  readonly timeoutMs: () => number | undefined;
  readonly log: Logger;
  /** Counts a move to another worker in the metrics and the log. */
  readonly onMigrate: (from: string, answered: number) => void;
}

/** What a pooling route answers: its body, the worker that answered, and the tokens to charge. */
export interface PooledAnswer {
  readonly body: unknown;
  readonly workerId: string;
  readonly promptTokens: number;
}

/**
 * Serves one request that generates nothing (`POST /v1/embeddings`, `/v1/rerank`, `/v1/score`):
 * reads the body and lets `parse` check it, checks the API key's model, refuses a LoRA adapter
 * (these run on the base model), and lets `answer` compute the reply; the server's deadline and a
 * client that disconnects cancel the work on the worker. Metrics and the key's usage (prompt
 * tokens only) are recorded as the generating routes record them.
 */
export async function servePooled<Request extends { readonly model: string }>(
  endpoint: RequestOutcome["endpoint"],
  what: string,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  deps: PoolingRouteDeps,
  parse: (raw: unknown) => Request,
  answer: (request: Request, context: PoolingContext) => Promise<PooledAnswer>,
): Promise<void> {
  const log = lazyChild(deps.logger, { requestId, endpoint });
  const headers: Record<string, string> = { "x-request-id": requestId };
  const arrivedAt = performance.now();
  const controller = new AbortController();
  const timeoutMs = deps.requestTimeoutMs;
  const deadline =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          controller.abort(
            new ArmatureError("REQUEST_TIMEOUT", `the request took longer than this server's limit of ${timeoutMs / 1000} s`),
          );
        }, timeoutMs);
  res.on("close", () => {
    clearTimeout(deadline);
    if (!res.writableFinished) {
      controller.abort(new ArmatureError("REQUEST_CANCELLED", "client disconnected"));
      deps.metrics.disconnected.inc();
    }
  });
  let timer: RequestTimer | undefined;
  try {
    const request = parse(await readJsonBody(req, deps.bodyLimitBytes));
    deps.access?.checkModel(request.model);
    const pipeline = await deps.pipelines.get(request.model);
    if (pipeline.lora !== undefined) {
      throw new ArmatureError(
        "REQUEST_INVALID",
        `'${request.model}' is a LoRA adapter of '${pipeline.card.name}', which serves completions; ${what} come from a model (name '${pipeline.card.name}')`,
        { param: "model" },
      );
    }
    timer = deps.metrics.startRequest(pipeline.card.name, arrivedAt);
    const result = await answer(request, {
      pipeline,
      signal: controller.signal,
      timeoutMs: () => (timeoutMs === undefined ? undefined : Math.max(0, timeoutMs - (performance.now() - arrivedAt))),
      log,
      onMigrate: (from, answered) => {
        deps.metrics.migrations.inc({ model: request.model });
        log.warn({ from, answered }, "worker failed mid-request; the rest moved to another worker");
      },
    });
    deps.access?.recordUsage(result.promptTokens, 0);
    timer.finish({ endpoint, requestType: "unary", status: "success", inputTokens: result.promptTokens });
    sendJson(res, 200, result.body, { ...headers, "x-armature-worker": result.workerId });
  } catch (error) {
    const http = toHttpError(error);
    if (http.status >= 500) log.error({ err: error }, `${endpoint} request failed`);
    else log.info({ status: http.status, code: http.body.error.code, message: http.body.error.message }, "request rejected");
    (timer ?? deps.metrics.startRequest("unknown")).finish({
      endpoint,
      requestType: "unary",
      status: "error",
      errorType: http.errorType,
    });
    if (res.headersSent || res.destroyed) return;
    sendJson(res, http.status, http.body, headers);
    if (http.status === 413) lingerThenClose(req);
  } finally {
    clearTimeout(deadline);
  }
}
