import type { IncomingMessage, ServerResponse } from "node:http";
import { lazyChild } from "../../observability/index.js";
import { ArmatureError, decodeEmbedding } from "../../protocol/index.js";
import { embedAll } from "../embedding-flow.js";
import type { RequestTimer } from "../frontend-metrics.js";
import { toHttpError } from "../http-errors.js";
import { lingerThenClose, readJsonBody, sendJson } from "../http-io.js";
import type { ModelPipeline } from "../model-pipelines.js";
import { refuseIfSurelyTooLong } from "../prompt-bound.js";
import { type EmbeddingsInput, type EmbeddingsRequest, parseEmbeddingsRequest } from "../requests/embeddings-request.js";
import type { GenerationRouteDeps } from "./generation-flow.js";

/** What the embeddings route needs from the server: the generating routes' needs, less tools and traces. */
export type EmbeddingsRouteDeps = Pick<
  GenerationRouteDeps,
  "router" | "pipelines" | "metrics" | "logger" | "bodyLimitBytes" | "requestTimeoutMs" | "migrationLimit" | "access"
>;

/**
 * `POST /v1/embeddings` (OpenAI's Create embeddings): the frontend tokenizes the texts as a completion
 * tokenizes its prompt, checks token ids and lengths against the model, and sends all inputs to one
 * aggregated or prefill worker; the answer lists one unit-length vector per input, in input order,
 * as float numbers or base64 (little-endian float32), with the input tokens as usage.
 */
export async function handleEmbeddings(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  deps: EmbeddingsRouteDeps,
): Promise<void> {
  const log = lazyChild(deps.logger, { requestId, endpoint: "embeddings" });
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
    const request = parseEmbeddingsRequest(await readJsonBody(req, deps.bodyLimitBytes));
    deps.access?.checkModel(request.model);
    const pipeline = await deps.pipelines.get(request.model);
    if (pipeline.lora !== undefined) {
      throw new ArmatureError(
        "REQUEST_INVALID",
        `'${request.model}' is a LoRA adapter of '${pipeline.card.name}', which serves completions; embeddings come from a model (name '${pipeline.card.name}')`,
        { param: "model" },
      );
    }
    timer = deps.metrics.startRequest(pipeline.card.name, arrivedAt);
    const inputs = await inputTokens(request.input, pipeline);
    const promptTokens = inputs.reduce((sum, input) => sum + input.length, 0);
    const result = await embedAll(
      deps.router,
      {
        type: "embed-request",
        requestId,
        model: request.model,
        inputs,
        dimensions: request.dimensions,
        timeoutMs: timeoutMs === undefined ? undefined : Math.max(0, timeoutMs - (performance.now() - arrivedAt)),
      },
      {
        signal: controller.signal,
        migrationLimit: deps.migrationLimit,
        onMigrate: (from, embedded) => {
          deps.metrics.migrations.inc({ model: request.model });
          log.warn({ from, embedded }, "worker failed mid-request; the remaining inputs moved to another worker");
        },
      },
    );
    const body = {
      object: "list",
      data: result.embeddings.map((embedding, index) => ({
        object: "embedding",
        index,
        embedding: formatted(embedding, request),
      })),
      model: request.model,
      usage: { prompt_tokens: promptTokens, total_tokens: promptTokens },
    };
    deps.access?.recordUsage(promptTokens, 0);
    timer.finish({ endpoint: "embeddings", requestType: "unary", status: "success", inputTokens: promptTokens });
    sendJson(res, 200, body, { ...headers, "x-armature-worker": result.workerId });
  } catch (error) {
    const http = toHttpError(error);
    if (http.status >= 500) log.error({ err: error }, "embeddings request failed");
    else log.info({ status: http.status, code: http.body.error.code, message: http.body.error.message }, "request rejected");
    (timer ?? deps.metrics.startRequest("unknown")).finish({
      endpoint: "embeddings",
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

/**
 * Each input's token ids: texts tokenized as `POST /v1/completions` tokenizes a prompt (so usage
 * equals `POST /tokenize`'s count), token ids checked against the vocabulary; every input must fit
 * the model's context (400 naming `input` otherwise).
 */
async function inputTokens(input: EmbeddingsInput, pipeline: ModelPipeline): Promise<number[][]> {
  const context = pipeline.card.contextLength;
  let inputs: number[][];
  if (input.kind === "texts") {
    for (const text of input.texts) refuseIfSurelyTooLong([text], pipeline, "input");
    inputs = [];
    for (const text of input.texts) inputs.push(await pipeline.tokenizeAsync(text));
  } else {
    const vocab = pipeline.tokenizer.vocabSize;
    for (const [index, tokens] of input.tokens.entries()) {
      const bad = tokens.find((t) => t >= vocab);
      if (bad !== undefined) {
        throw new ArmatureError(
          "REQUEST_INVALID",
          `input ${index} holds token id ${bad}, outside this model's vocabulary (0..${vocab - 1})`,
          { param: "input" },
        );
      }
    }
    inputs = input.tokens.map((tokens) => [...tokens]);
  }
  for (const [index, tokens] of inputs.entries()) {
    if (tokens.length === 0) throw new ArmatureError("REQUEST_INVALID", `input ${index} has no tokens`, { param: "input" });
    if (tokens.length >= context) {
      throw new ArmatureError(
        "PROMPT_TOO_LONG",
        `input ${index} has ${tokens.length} tokens; this model's maximum context length is ${context} tokens, so an input may have at most ${context - 1}`,
        { param: "input" },
      );
    }
  }
  return inputs;
}

/** The wire's base64 as the client asked for it: passed through, or as float numbers. */
function formatted(embedding: string, request: EmbeddingsRequest): string | number[] {
  return request.encodingFormat === "base64" ? embedding : decodeEmbedding(embedding);
}
