import { ArmatureError } from "../protocol/index.js";
import type { ModelPipeline } from "./model-pipelines.js";

/**
 * Refuses a prompt that cannot fit the model's context before any work is spent on it: its texts
 * hold at least `bytes / maxTokenBytes` tokens whatever the template adds, so a body of megabytes
 * is refused without rendering the chat template or running the tokenizer over it.
 */
export function refuseIfSurelyTooLong(texts: readonly string[], pipeline: ModelPipeline, param: string): void {
  let bytes = 0;
  for (const text of texts) bytes += Buffer.byteLength(text, "utf8");
  const atLeast = Math.ceil(bytes / pipeline.tokenizer.maxTokenBytes);
  const context = pipeline.card.contextLength;
  if (atLeast >= context) {
    throw new ArmatureError(
      "PROMPT_TOO_LONG",
      `This model's maximum context length is ${context} tokens; the prompt has at least ${atLeast} (${bytes} bytes of text). Shorten the ${param === "messages" ? "messages" : "prompt"}.`,
      { param },
    );
  }
}

/**
 * The token ids of each text of a pooled request (embedding inputs, rerank queries and documents),
 * tokenized as `POST /v1/completions` tokenizes a prompt: a text surely past the context is refused
 * before any is tokenized, and one that gives no token is refused, each naming `param`.
 */
export async function tokenizeEach(texts: readonly string[], pipeline: ModelPipeline, param: string): Promise<number[][]> {
  for (const text of texts) refuseIfSurelyTooLong([text], pipeline, param);
  const out: number[][] = [];
  for (const [index, text] of texts.entries()) {
    const tokens = await pipeline.tokenizeAsync(text);
    if (tokens.length === 0) throw new ArmatureError("REQUEST_INVALID", `${param} ${index} has no tokens`, { param });
    out.push(tokens);
  }
  return out;
}
