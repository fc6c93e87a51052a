import type { LlamaModel, LlamaRankingContext, Token } from "node-llama-cpp";
import { ArmatureError, queryOf, type RankRequest } from "../../protocol/index.js";
import type { RankedPair } from "../engine.js";
import { vocabularySize } from "./model-tokens.js";

export interface LlamaRankerOptions {
  /** Tokens the ranking context holds: the longest query and document pair, with the tokens ranking adds. */
  readonly contextSize: number;
  readonly threads: number;
}

/**
 * Scores of one llama.cpp ranking model (a reranker: a GGUF with a classifier head,
 * `cls.output.weight`) through node-llama-cpp's ranking context: its own llama.cpp context with
 * rank pooling, apart from the generation context, made on the first request and kept. Each pair is
 * the query and the document joined as the model's ranking input (its `chat_template.rerank`, or
 * BOS, query, EOS, SEP, document, EOS) and scored as the model's probability of relevance.
 * Requests take turns on its one sequence.
 */
export class LlamaRanker {
  readonly #model: LlamaModel;
  readonly #options: LlamaRankerOptions;
  #context: Promise<LlamaRankingContext> | undefined;
  #closed = false;

  constructor(model: LlamaModel, options: LlamaRankerOptions) {
    this.#model = model;
    this.#options = options;
  }

  /** Whether the model can rank at all (node-llama-cpp's reading of its tensors and tokens). */
  static supports(model: LlamaModel): boolean {
    return model.fileInsights.supportsRanking === true;
  }

  /**
   * One score per document, in order. Refuses the whole request before scoring any of it when a
   * token id is outside the vocabulary or a pair does not fit the context; stops before the next
   * document once `signal` aborts.
   */
  async *rank(request: RankRequest, signal: AbortSignal): AsyncGenerator<RankedPair> {
    if (this.#closed) throw new ArmatureError("ENGINE_CLOSED", "engine is closed", { retryable: true });
    this.#refuseOutsideVocabulary(request);
    const context = await this.#open();
    const lengths = request.documents.map((document, index) =>
      context.calculateInputLength(queryOf(request, index) as Token[], document as Token[]),
    );
    const longest = lengths.findIndex((length) => length >= this.#options.contextSize);
    if (longest >= 0) {
      throw new ArmatureError(
        "PROMPT_TOO_LONG",
        `document ${longest} and its query make ${lengths[longest]} tokens with the tokens ranking adds; this model ranks at most ${this.#options.contextSize - 1}`,
        { param: "documents" },
      );
    }
    for (const [index, document] of request.documents.entries()) {
      signal.throwIfAborted();
      const score = await context.rank(queryOf(request, index) as Token[], document as Token[]);
      yield { score: Math.min(1, Math.max(0, score)), promptTokens: lengths[index] as number };
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const context = this.#context;
    this.#context = undefined;
    await context?.then((c) => c.dispose()).catch(() => undefined);
  }

  #refuseOutsideVocabulary(request: RankRequest): void {
    const vocab = vocabularySize(this.#model);
    for (const field of ["queries", "documents"] as const) {
      for (const [index, list] of request[field].entries()) {
        const bad = list.find((t) => t >= vocab);
        if (bad !== undefined) {
          throw new ArmatureError(
            "REQUEST_INVALID",
            `${field === "queries" ? "query" : "document"} ${index} holds token id ${bad}, outside this model's vocabulary (0..${vocab - 1})`,
            { param: field === "queries" ? "query" : "documents" },
          );
        }
      }
    }
  }

  #open(): Promise<LlamaRankingContext> {
    if (!this.#context) {
      const { contextSize, threads } = this.#options;
      // One batch holds a whole pair: the ranking head pools over every token of it.
      const opening = this.#model.createRankingContext({ contextSize, batchSize: contextSize, threads });
      this.#context = opening.catch((cause: unknown) => {
        this.#context = undefined;
        throw new ArmatureError("ENGINE_FAILED", `cannot create the ranking context: ${(cause as Error).message}`, { cause });
      });
    }
    return this.#context;
  }
}
