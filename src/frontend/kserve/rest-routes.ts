import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../../observability/index.js";
import { ArmatureError } from "../../protocol/index.js";
import type { AccessDenial } from "../access/index.js";
import type { Generation, GenerationEnd } from "../generation.js";
import { toHttpError } from "../http-errors.js";
import { sendJson } from "../http-io.js";
import { asObject } from "../requests/field-checks.js";
import { type GenerationApi, type GenerationRouteDeps, serveGeneration } from "../routes/generation-flow.js";
import { streamGeneration } from "../sse-stream.js";
import { SseWriter } from "../sse-writer.js";
import { modelMetadata, servedModel, serverMetadata } from "./kserve-metadata.js";
import { KservePathError, type KserveRoute, parseKservePath } from "./kserve-paths.js";
import { type LlmRequest, llmGenerateRequest, llmInferRequest } from "./llm-request.js";
import { collectText, promptTokens } from "./llm-run.js";
import { parseRestInfer, restOutput } from "./rest-tensors.js";

/** Paths this module answers: `/v2` and everything under it. */
export function isKservePath(path: string): boolean {
  return path === "/v2" || path.startsWith("/v2/");
}

/**
 * The KServe v2 REST API (Open Inference Protocol, inference_rest.md) and Triton's generate
 * extension, on the frontend's HTTP port. Every error is KServe's `{"error": "..."}` with the
 * status the OpenAI routes would give.
 */
export async function handleKserveRest(
  req: IncomingMessage,
  res: ServerResponse,
  path: string,
  requestId: string,
  deps: GenerationRouteDeps,
): Promise<void> {
  const headers: Record<string, string> = { "x-request-id": requestId };
  try {
    const route = parseKservePath(req.method ?? "GET", path);
    if (route.kind !== "infer" && route.kind !== "generate") req.resume();
    switch (route.kind) {
      case "server-live":
        return sendJson(res, 200, { live: true }, headers);
      case "server-ready": {
        const ready = deps.router.workers.all().length > 0;
        return sendJson(res, ready ? 200 : 503, { ready }, headers);
      }
      case "server-metadata":
        return sendJson(res, 200, serverMetadata(), headers);
      case "model-ready": {
        const card = servedModel(deps.router, route.model, deps.access);
        return sendJson(res, card ? 200 : 404, { name: route.model, ready: card !== undefined }, headers);
      }
      case "model-metadata": {
        const card = servedModel(deps.router, route.model, deps.access);
        if (!card) throw notFound(route.model);
        return sendJson(res, 200, modelMetadata(card), headers);
      }
      case "infer":
      case "generate":
        return await serveGeneration(kserveGenerationApi(route), req, res, requestId, deps);
    }
  } catch (error) {
    if (res.headersSent) return;
    req.resume();
    if (error instanceof KservePathError) return sendJson(res, error.status, { error: error.message }, headers);
    const http = toHttpError(error);
    sendJson(res, http.status, { error: http.body.error.message }, headers);
  }
}

/** An API key's refusal (401, 429) with its status and headers, in KServe's error shape. */
export function sendKserveDenial(
  req: IncomingMessage,
  res: ServerResponse,
  denial: AccessDenial,
  headers: Record<string, string>,
): void {
  req.resume();
  sendJson(res, denial.status, { error: denial.body.error.message }, { ...headers, ...denial.headers });
}

export function notFound(model: string): ArmatureError {
  return new ArmatureError("MODEL_NOT_FOUND", `model '${model}' is not served here (or your API key may not use it)`, {
    param: "model",
  });
}

/** `infer`, `generate` and `generate_stream` through the HTTP routes' generation flow, answering in KServe's shapes. */
function kserveGenerationApi(route: Extract<KserveRoute, { kind: "infer" | "generate" }>): GenerationApi<LlmRequest> {
  return {
    endpoint: route.kind === "infer" ? "kserve_infer" : "kserve_generate",
    parse: (raw) => {
      if (route.kind === "generate") return llmGenerateRequest(route.model, asObject(raw, "body"), route.stream);
      const request = llmInferRequest(route.model, parseRestInfer(raw));
      if (request.streaming) {
        throw new ArmatureError(
          "NOT_SUPPORTED",
          "input 'streaming' true is not served on /infer: use /generate_stream, or gRPC ModelStreamInfer (--grpc-port)",
          { param: "inputs.streaming" },
        );
      }
      return request;
    },
    prepare: async (request, pipeline) => ({ tokenIds: await promptTokens(request, pipeline), params: request.params }),
    respond: (request, generation, { res, headers, log }) => {
      if (route.kind === "infer") return inferResponse(request, generation, res, headers);
      return route.stream
        ? generateStream(request, generation, res, headers, log)
        : generateResponse(request, generation, res, headers);
    },
    errorBody: (http) => ({ error: http.body.error.message }),
    // Past the first event, as Triton does: an error event under the 200 already sent.
    endStreamWithError: (res, http) => res.end(`data: ${JSON.stringify({ error: http.body.error.message })}\n\n`),
  };
}

async function inferResponse(
  request: LlmRequest,
  generation: Generation,
  res: ServerResponse,
  headers: Record<string, string>,
): Promise<GenerationEnd | undefined> {
  const result = await collectText(generation);
  if (!result) return undefined;
  const values = { text_output: result.text, finish_reason: result.end.finishReason };
  sendJson(
    res,
    200,
    {
      model_name: request.model,
      ...(request.id === undefined ? {} : { id: request.id }),
      outputs: request.outputs.map((name) => restOutput(name, values[name])),
    },
    headers,
  );
  return result.end;
}

async function generateResponse(
  request: LlmRequest,
  generation: Generation,
  res: ServerResponse,
  headers: Record<string, string>,
): Promise<GenerationEnd | undefined> {
  const result = await collectText(generation);
  if (!result) return undefined;
  sendJson(res, 200, generateBody(request, result.text, result.end.finishReason), headers);
  return result.end;
}

/**
 * Server-sent events of `GenerateStreamResponse`, the last with the finish reason; no `[DONE]`
 * (neither spec has one). A failure after the stream began is one `{"error": message}` event, as
 * the REST errors' shape.
 */
function generateStream(
  request: LlmRequest,
  generation: Generation,
  res: ServerResponse,
  headers: Record<string, string>,
  log: Logger,
): Promise<GenerationEnd | undefined> {
  return streamGeneration(
    generation,
    new SseWriter(res, headers),
    {
      named: false,
      doneMarker: false,
      start: () => [],
      text: (event) => [generateBody(request, event.text, undefined)],
      end: (event) => [generateBody(request, "", event.finishReason)],
      error: (http) => [{ error: http.body.error.message }],
    },
    log,
  );
}

function generateBody(request: LlmRequest, text: string, finishReason: string | undefined): Record<string, unknown> {
  return {
    ...(request.id === undefined ? {} : { id: request.id }),
    model_name: request.model,
    text_output: text,
    ...(finishReason === undefined ? {} : { finish_reason: finishReason }),
  };
}
