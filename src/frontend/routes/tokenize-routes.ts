import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../../observability/index.js";
import { ArmatureError } from "../../protocol/index.js";
import type { RequestGrant } from "../access/index.js";
import { toHttpError } from "../http-errors.js";
import { lingerThenClose, readJsonBody, sendJson } from "../http-io.js";
import type { ModelPipeline, ModelPipelines } from "../model-pipelines.js";
import { parseDetokenizeRequest, parseTokenizeRequest, type TokenizeRequest } from "../requests/tokenize-request.js";

export interface TokenizeRoutesDeps {
  readonly pipelines: ModelPipelines;
  readonly logger: Logger;
  readonly bodyLimitBytes: number;
  /** The API key's grant: which models it may use. Absent without keys. */
  readonly access?: RequestGrant | undefined;
}

/**
 * `POST /tokenize` (vLLM's): the tokens a completion of `prompt`, or a chat completion of
 * `messages`, would send to the engine, through the same tokenizer and chat template, as
 * `{count, max_model_len, tokens}`. No worker is involved and no quota is spent.
 */
export function handleTokenize(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  deps: TokenizeRoutesDeps,
): Promise<void> {
  return answer(req, res, requestId, deps, async (raw) => {
    const request = parseTokenizeRequest(raw);
    const pipeline = await pipelineFor(request.model, deps);
    const tokens = await tokenize(request, pipeline);
    return { count: tokens.length, max_model_len: pipeline.card.contextLength, tokens };
  });
}

/** `POST /detokenize` (vLLM's): the text of `tokens`, as `{prompt}`. */
export function handleDetokenize(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  deps: TokenizeRoutesDeps,
): Promise<void> {
  return answer(req, res, requestId, deps, async (raw) => {
    const request = parseDetokenizeRequest(raw);
    const pipeline = await pipelineFor(request.model, deps);
    const vocab = pipeline.tokenizer.vocabSize;
    const bad = request.tokens.find((t) => t >= vocab);
    if (bad !== undefined) {
      throw new ArmatureError("REQUEST_INVALID", `token id ${bad} is outside this model's vocabulary (0..${vocab - 1})`, {
        param: "tokens",
      });
    }
    return { prompt: pipeline.tokenizer.decode(request.tokens) };
  });
}

/** The same prompt tokens `POST /v1/completions` and `POST /v1/chat/completions` generate from. */
function tokenize(request: TokenizeRequest, pipeline: ModelPipeline): Promise<number[]> {
  if (request.kind === "text") return pipeline.tokenizeAsync(request.prompt);
  return pipeline.tokenizeAsync(
    pipeline.renderChat(request.messages, { addGenerationPrompt: request.addGenerationPrompt, tools: request.tools }),
  );
}

async function pipelineFor(model: string, deps: TokenizeRoutesDeps): Promise<ModelPipeline> {
  deps.access?.checkModel(model);
  return deps.pipelines.get(model);
}

async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  deps: TokenizeRoutesDeps,
  serve: (body: unknown) => Promise<unknown>,
): Promise<void> {
  const headers = { "x-request-id": requestId };
  try {
    const body = await serve(await readJsonBody(req, deps.bodyLimitBytes));
    sendJson(res, 200, body, headers);
  } catch (error) {
    const http = toHttpError(error);
    if (http.status >= 500) deps.logger.error({ err: error, requestId }, "tokenizer request failed");
    if (res.headersSent || res.destroyed) return;
    sendJson(res, http.status, http.body, headers);
    if (http.status === 413) lingerThenClose(req);
  }
}
