import { existsSync } from "node:fs";
import { Template } from "@huggingface/jinja";
import { CHATML_TEMPLATE, loadTokenizer, processTokenizerBundle, type Tokenizer } from "../engines/index.js";
import { ArmatureError, type ModelCard } from "../protocol/index.js";
import type { WorkerSet } from "../router/index.js";
import type { ChatMessage } from "./requests/chat-request.js";
import { BOUNDED_RANGE, boundedRange, boundRangeCalls } from "./template-range.js";
import type { TokenizerFetcher } from "./tokenizer-fetch.js";
import { type FunctionTool, templateToolCalls, templateTools } from "./tool-calls/index.js";

/**
 * What the frontend needs to turn a request for one model into tokens and back: the base model's
 * card, tokenizer and template, and for a request that names a LoRA adapter, the adapter (which
 * shares them).
 */
export class ModelPipeline {
  readonly card: ModelCard;
  readonly tokenizer: Tokenizer;
  /** The LoRA adapter the client named as its `model`; undefined for the base model. */
  readonly lora: string | undefined;
  readonly #template: Template;

  constructor(card: ModelCard, tokenizer: Tokenizer, lora?: string, template?: Template) {
    this.card = card;
    this.tokenizer = tokenizer;
    this.lora = lora;
    this.#template = template ?? boundRangeCalls(new Template(card.chatTemplate ?? CHATML_TEMPLATE));
  }

  /** The same pipeline for requests that run with adapter `lora`. */
  withLora(lora: string): ModelPipeline {
    return new ModelPipeline(this.card, this.tokenizer, lora, this.#template);
  }

  /**
   * Renders the chat template, by default with a generation prompt for the assistant (what a chat
   * completion generates after); `/tokenize` may leave it out. Declared `tools`, an assistant's
   * `tool_calls` and a tool message's `tool_call_id` reach the template as Hugging Face templates
   * expect them.
   */
  renderChat(
    messages: readonly ChatMessage[],
    options: { addGenerationPrompt?: boolean; tools?: readonly FunctionTool[] | undefined } = {},
  ): string {
    try {
      return this.#template.render({
        messages: messages.map((m) => ({
          role: m.role,
          content: m.content,
          ...(m.toolCalls ? { tool_calls: templateToolCalls(m.toolCalls) } : {}),
          ...(m.toolCallId ? { tool_call_id: m.toolCallId } : {}),
        })),
        ...(options.tools && options.tools.length > 0 ? { tools: templateTools(options.tools) } : {}),
        add_generation_prompt: options.addGenerationPrompt ?? true,
        bos_token: this.card.bosToken ?? "",
        eos_token: this.card.eosToken ?? "",
        // The template comes from a worker's card: its own loops are bounded (see `boundedRange`).
        [BOUNDED_RANGE]: boundedRange(),
      });
    } catch (cause) {
      if (cause instanceof ArmatureError) throw cause;
      throw new ArmatureError(
        "REQUEST_INVALID",
        `the model's chat template rejected these messages: ${(cause as Error).message}`,
        {
          cause,
          param: "messages",
        },
      );
    }
  }

  /** Tokenizes prompt text; special-token text in it becomes special tokens. */
  tokenize(text: string): number[] {
    return this.tokenizer.encode(text, { special: true });
  }

  /** As `tokenize`, but a long prompt does not hold the event loop (see `Tokenizer.encodeAsync`). */
  tokenizeAsync(text: string): Promise<number[]> {
    if (this.tokenizer.encodeAsync) return this.tokenizer.encodeAsync(text, { special: true });
    return Promise.resolve(this.tokenize(text));
  }
}

/**
 * One pipeline per served model, built from its workers' card and cached while the card names the
 * same tokenizer (a model that registers again with another tokenizer gets a fresh pipeline). A
 * tokenizer whose path this process cannot read, or whose files here hash otherwise than the card
 * says, is fetched from one of the model's workers (`fetch`).
 */
export class ModelPipelines {
  readonly #workers: WorkerSet;
  readonly #fetch: TokenizerFetcher | undefined;
  readonly #pipelines = new Map<string, { readonly key: string; readonly pipeline: Promise<ModelPipeline> }>();

  constructor(workers: WorkerSet, fetch?: TokenizerFetcher) {
    this.#workers = workers;
    this.#fetch = fetch;
  }

  /** Names of the models some worker serves now. */
  servedModels(): ModelCard[] {
    return this.#workers.models();
  }

  /**
   * The pipeline for `model`: a model some worker serves, or a LoRA adapter some worker serves
   * beside its model (the base model's pipeline, with the adapter); `MODEL_NOT_FOUND` when neither.
   */
  async get(model: string): Promise<ModelPipeline> {
    const card = this.#workers.models().find((c) => c.name === model);
    if (!card) {
      const parent = this.#workers.adapterParent(model);
      if (parent !== undefined) return (await this.get(parent)).withLora(model);
      throw new ArmatureError("MODEL_NOT_FOUND", `The model \`${model}\` does not exist or you do not have access to it.`, {
        param: "model",
      });
    }
    const key = JSON.stringify(card.tokenizer);
    const cached = this.#pipelines.get(model);
    if (cached?.key === key) return cached.pipeline;
    const pipeline = this.#load(card);
    pipeline.catch(() => {
      if (this.#pipelines.get(model)?.pipeline === pipeline) this.#pipelines.delete(model);
    });
    this.#pipelines.set(model, { key, pipeline });
    return pipeline;
  }

  async #load(card: ModelCard): Promise<ModelPipeline> {
    const source = card.tokenizer;
    if (source.kind !== "bytes" && source.sha256 !== undefined && this.#fetch && !(await holds(source))) {
      const local = await this.#fetch(
        card,
        this.#workers.forModel(card.name).map((w) => w.id),
      );
      return new ModelPipeline(card, await loadTokenizer(local));
    }
    return new ModelPipeline(card, await loadTokenizer(source));
  }
}

/** Whether this process reads the tokenizer the card names: its path, with files that hash as the card says. */
async function holds(source: Exclude<ModelCard["tokenizer"], { kind: "bytes" }>): Promise<boolean> {
  if (!existsSync(source.path)) return false;
  // The source as a worker's engine names it (no hash): in one process, the copy the worker read.
  const { sha256: _named, ...path } = source;
  const here = await processTokenizerBundle(path).catch(() => undefined);
  return here?.sha256 === source.sha256;
}
