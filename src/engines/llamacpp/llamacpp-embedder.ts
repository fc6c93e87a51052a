import type { LlamaEmbeddingContext, LlamaModel, Token } from "node-llama-cpp";
import { ArmatureError, type EmbedRequest } from "../../protocol/index.js";
import { vocabularySize } from "./model-tokens.js";

export interface LlamaEmbedderOptions {
  /** Tokens the embedding context holds: the longest input it embeds, plus any BOS/EOS it adds. */
  readonly contextSize: number;
  readonly threads: number;
}

/**
 * Embeddings of one llama.cpp model through node-llama-cpp's embedding context: its own llama.cpp
 * context (with `embeddings` on), apart from the generation context, so it never touches a
 * generation's sequences or KV cache. It is created on the first request and kept, and its memory
 * (a KV cache of `contextSize` tokens and the batch buffers) is held from then on. Requests take
 * turns on its one sequence.
 *
 * The vector is what llama.cpp gives for the model's pooling type (the GGUF's `pooling_type`:
 * mean, CLS or last for embedding models; generative models set none, and then it is the last
 * token's final hidden state), scaled to unit length (L2), as OpenAI's embeddings and llama.cpp's
 * server return them.
 */
export class LlamaEmbedder {
  readonly #model: LlamaModel;
  readonly #options: LlamaEmbedderOptions;
  #context: Promise<LlamaEmbeddingContext> | undefined;
  #closed = false;

  constructor(model: LlamaModel, options: LlamaEmbedderOptions) {
    this.#model = model;
    this.#options = options;
  }

  /** The size of every vector this model's embeddings have. */
  get dimensions(): number {
    return this.#model.embeddingVectorSize;
  }

  /**
   * One unit-length vector per input, in order. Refuses the whole request before embedding any of
   * it when a field cannot be served; stops before the next input once `signal` aborts.
   */
  async *embed(request: EmbedRequest, signal: AbortSignal): AsyncGenerator<Float32Array> {
    this.#refuseUnservable(request);
    const context = await this.#open();
    for (const [index, input] of request.inputs.entries()) {
      signal.throwIfAborted();
      const length = context.calculateInputLength(input as Token[]);
      if (length >= this.#options.contextSize) {
        throw new ArmatureError(
          "PROMPT_TOO_LONG",
          `input ${index} is ${length} tokens with the tokens the model adds; this model embeds at most ${this.#options.contextSize - 1}`,
          { param: "input" },
        );
      }
      const embedding = await context.getEmbeddingFor(input as Token[]);
      yield unitLength(embedding.vector);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const context = this.#context;
    this.#context = undefined;
    await context?.then((c) => c.dispose()).catch(() => undefined);
  }

  #refuseUnservable(request: EmbedRequest): void {
    if (this.#closed) throw new ArmatureError("ENGINE_CLOSED", "engine is closed", { retryable: true });
    if (request.dimensions !== undefined && request.dimensions !== this.dimensions) {
      throw new ArmatureError(
        "NOT_SUPPORTED",
        `'dimensions' ${request.dimensions} is not supported: this model's embeddings have ${this.dimensions} dimensions and cannot be shortened; leave it out or send ${this.dimensions}`,
        { param: "dimensions" },
      );
    }
    const vocab = vocabularySize(this.#model);
    for (const [index, input] of request.inputs.entries()) {
      if (input.length === 0) throw new ArmatureError("REQUEST_INVALID", `input ${index} has no tokens`, { param: "input" });
      const bad = input.find((t) => t >= vocab);
      if (bad !== undefined) {
        throw new ArmatureError(
          "REQUEST_INVALID",
          `input ${index} holds token id ${bad}, outside this model's vocabulary (0..${vocab - 1})`,
          { param: "input" },
        );
      }
    }
  }

  #open(): Promise<LlamaEmbeddingContext> {
    if (!this.#context) {
      const { contextSize, threads } = this.#options;
      // One batch holds a whole input: pooled embeddings need every token in the same batch.
      const opening = this.#model.createEmbeddingContext({ contextSize, batchSize: contextSize, threads });
      this.#context = opening.catch((cause: unknown) => {
        this.#context = undefined;
        throw new ArmatureError("ENGINE_FAILED", `cannot create the embedding context: ${(cause as Error).message}`, {
          cause,
        });
      });
    }
    return this.#context;
  }
}

/** `vector` scaled to length 1; an all-zero vector stays zero. */
function unitLength(vector: readonly number[]): Float32Array {
  let squares = 0;
  for (const x of vector) squares += x * x;
  const norm = Math.sqrt(squares);
  const out = new Float32Array(vector.length);
  for (let i = 0; i < vector.length; i++) out[i] = norm > 0 ? (vector[i] as number) / norm : 0;
  return out;
}
