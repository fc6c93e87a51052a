import { ArmatureError } from "../../protocol/index.js";
import type { ModelPipeline } from "../model-pipelines.js";
import type { ChatRequest } from "../requests/chat-request.js";
import type { ChoicesResponseOptions } from "./choice-responses.js";
import type { ChoicePrompt } from "./choices.js";
import type { CompletionPrompt, CompletionRequest } from "./completion-request.js";

/** What a request asks of the choices path: its prompts, `n`, `best_of`, and how the response is shaped. */
export interface ChoicePlan {
  readonly prompts: readonly ChoicePrompt[];
  readonly n: number;
  readonly bestOf: number;
  readonly response: ChoicesResponseOptions;
}

/**
 * The plan when the request needs more than one plain choice (`n` > 1, `best_of`, a batch of prompts,
 * `echo`, `logprobs`); undefined when it is one plain choice. Tool calls are served on one choice
 * without log-probabilities: a request with them and any of these is refused naming the field.
 */
export function planChoices(
  request: ChatRequest | CompletionRequest,
  pipeline: ModelPipeline,
  firstTokens: readonly number[],
  tokenize: (prompt: CompletionPrompt) => number[],
  withTools: boolean,
): ChoicePlan | undefined {
  const n = request.n ?? 1;
  const text = request.kind === "text" ? request : undefined;
  const bestOf = text?.bestOf ?? n;
  const prompts = text?.prompts ?? [undefined];
  const asked =
    n > 1
      ? "n"
      : request.logprobs
        ? "logprobs"
        : bestOf > n
          ? "best_of"
          : text?.echo
            ? "echo"
            : prompts.length > 1
              ? "prompt"
              : undefined;
  if (asked === undefined) return undefined;
  if (withTools) {
    throw new ArmatureError("NOT_SUPPORTED", `'${asked}' cannot be combined with 'tools' yet; send them in separate requests`, {
      param: asked,
    });
  }
  const choicePrompts = prompts.map((prompt, i): ChoicePrompt => {
    const tokenIds = i === 0 || prompt === undefined ? firstTokens : tokenize(prompt);
    if (!text?.echo || prompt === undefined) return { tokenIds };
    return { tokenIds, echo: "text" in prompt ? prompt.text : pipeline.tokenizer.decode(prompt.tokenIds) };
  });
  return {
    prompts: choicePrompts,
    n,
    bestOf,
    response: {
      stream: request.stream,
      includeUsage: request.includeUsage,
      logprobs: request.logprobs !== undefined,
      choiceCount: prompts.length * n,
    },
  };
}
