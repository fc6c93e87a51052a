import type { IncomingMessage, ServerResponse } from "node:http";
import { ArmatureError, decodeEmbedding } from "../../protocol/index.js";
import type { ModelPipeline } from "../model-pipelines.js";
import { embedAll } from "../pooling-flow.js";
import { tokenizeEach } from "../prompt-bound.js";
import { type EmbeddingsInput, type EmbeddingsRequest, parseEmbeddingsRequest } from "../requests/embeddings-request.js";
import { type PoolingRouteDeps, servePooled } from "./pooling-route.js";

/**
 * `POST /v1/embeddings` (OpenAI's Create embeddings): the frontend tokenizes the texts as a completion
 * tokenizes its prompt, checks token ids and lengths against the model, and sends all inputs to one
 * aggregated or prefill worker; the answer lists one unit-length vector per input, in input order,
 * as float numbers or base64 (little-endian float32), with the input tokens as usage.
 */
export function handleEmbeddings(
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  deps: PoolingRouteDeps,
): Promise<void> {
  return servePooled("embeddings", "embeddings", req, res, requestId, deps, parseEmbeddingsRequest, async (request, context) => {
    const inputs = await inputTokens(request.input, context.pipeline);
    const promptTokens = inputs.reduce((sum, input) => sum + input.length, 0);
    const result = await embedAll(
      deps.router,
      {
        type: "embed-request",
        requestId,
        model: request.model,
        inputs,
        dimensions: request.dimensions,
        timeoutMs: context.timeoutMs(),
      },
      { signal: context.signal, migrationLimit: deps.migrationLimit, onMigrate: context.onMigrate },
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
    return { body, workerId: result.workerId, promptTokens };
  });
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
    inputs = await tokenizeEach(input.texts, pipeline, "input");
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
