import { Template } from "@huggingface/jinja";
import { CHATML_TEMPLATE, loadTokenizer, type Tokenizer } from "../engines/index.js";
import { ArmatureError, type ModelCard } from "../protocol/index.js";
import type { WorkerSet } from "../router/index.js";
import type { ChatMessage } from "./requests/chat-request.js";
import { type FunctionTool, templateToolCalls, templateTools } from "./tool-calls/index.js";

/** What the frontend needs to turn a request for one model into tokens and back. */
export class ModelPipeline {
  readonly card: ModelCard;
  readonly tokenizer: Tokenizer;
  readonly #template: Template;

  constructor(card: ModelCard, tokenizer: Tokenizer) {
    this.card = card;
    this.tokenizer = tokenizer;
    this.#template = new Template(card.chatTemplate ?? CHATML_TEMPLATE);
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
      });
    } catch (cause) {
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

/** One pipeline per served model, built from the first card seen and cached. */
export class ModelPipelines {
  readonly #workers: WorkerSet;
  readonly #pipelines = new Map<string, Promise<ModelPipeline>>();

  constructor(workers: WorkerSet) {
    this.#workers = workers;
  }

  /** Names of the models some worker serves now. */
  servedModels(): ModelCard[] {
    return this.#workers.models();
  }

  /** The pipeline for `model`; `MODEL_NOT_FOUND` when no worker serves it. */
  async get(model: string): Promise<ModelPipeline> {
    const card = this.#workers.models().find((c) => c.name === model);
    if (!card) {
      throw new ArmatureError("MODEL_NOT_FOUND", `The model \`${model}\` does not exist or you do not have access to it.`, {
        param: "model",
      });
    }
    let pipeline = this.#pipelines.get(model);
    if (!pipeline) {
      pipeline = loadTokenizer(card.tokenizer).then((tokenizer) => new ModelPipeline(card, tokenizer));
      pipeline.catch(() => this.#pipelines.delete(model));
      this.#pipelines.set(model, pipeline);
    }
    return pipeline;
  }
}
