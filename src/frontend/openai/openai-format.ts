import type { Usage } from "../generation.js";
import type { ChatToolCall } from "../tool-calls/index.js";

/** Builders for OpenAI response objects and stream chunks, chat and legacy completions. */
export interface ResponseIdentity {
  readonly id: string;
  readonly created: number;
  readonly model: string;
}

export type FinishReason = "stop" | "length" | "tool_calls";

export const chatFormat = {
  /**
   * `toolCalls`, when there are any, become `message.tool_calls` (`text` is then null or the text
   * beside them); `reasoning`, when a reasoning parser split the answer, `message.reasoning_content`.
   */
  response(
    idn: ResponseIdentity,
    text: string | null,
    finishReason: FinishReason,
    usage: Usage,
    toolCalls: readonly ChatToolCall[] = [],
    reasoning?: string,
  ) {
    return {
      id: idn.id,
      object: "chat.completion" as const,
      created: idn.created,
      model: idn.model,
      choices: [
        {
          index: 0,
          message: {
            role: "assistant" as const,
            content: text,
            refusal: null,
            ...(reasoning === undefined ? {} : { reasoning_content: reasoning }),
            ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}),
          },
          logprobs: null,
          finish_reason: finishReason,
        },
      ],
      usage,
    };
  },

  chunk(idn: ResponseIdentity, delta: Record<string, unknown>, finishReason: FinishReason | null, withUsageField: boolean) {
    return {
      id: idn.id,
      object: "chat.completion.chunk" as const,
      created: idn.created,
      model: idn.model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
      ...(withUsageField ? { usage: null } : {}),
    };
  },

  firstDelta: { role: "assistant", content: "" } as Record<string, unknown>,
  textDelta: (text: string): Record<string, unknown> => ({ content: text }),
  reasoningDelta: (text: string): Record<string, unknown> => ({ reasoning_content: text }),
  finalDelta: {} as Record<string, unknown>,

  usageChunk(idn: ResponseIdentity, usage: Usage) {
    return { id: idn.id, object: "chat.completion.chunk" as const, created: idn.created, model: idn.model, choices: [], usage };
  },
};

export const completionFormat = {
  response(idn: ResponseIdentity, text: string, finishReason: FinishReason, usage: Usage) {
    return {
      id: idn.id,
      object: "text_completion" as const,
      created: idn.created,
      model: idn.model,
      choices: [{ index: 0, text, logprobs: null, finish_reason: finishReason }],
      usage,
    };
  },

  chunk(idn: ResponseIdentity, text: string, finishReason: FinishReason | null, withUsageField: boolean) {
    return {
      id: idn.id,
      object: "text_completion" as const,
      created: idn.created,
      model: idn.model,
      choices: [{ index: 0, text, logprobs: null, finish_reason: finishReason }],
      ...(withUsageField ? { usage: null } : {}),
    };
  },

  usageChunk(idn: ResponseIdentity, usage: Usage) {
    return { id: idn.id, object: "text_completion" as const, created: idn.created, model: idn.model, choices: [], usage };
  },
};

/**
 * Serialises the per-token stream chunks with everything but the text fixed once per request;
 * byte-for-byte what `JSON.stringify` of the chunk object gives, without building it per token.
 */
export function textChunkSerializer(
  kind: "chat" | "text",
  idn: ResponseIdentity,
  withUsageField: boolean,
): (text: string) => string {
  const sample =
    kind === "chat"
      ? chatFormat.chunk(idn, chatFormat.textDelta("\u0000"), null, withUsageField)
      : completionFormat.chunk(idn, "\u0000", null, withUsageField);
  const [head, tail] = JSON.stringify(sample).split('"\\u0000"') as [string, string];
  return (text) => head + JSON.stringify(text) + tail;
}
