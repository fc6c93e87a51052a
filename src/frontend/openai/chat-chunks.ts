import {
  answerWithToolCalls,
  type ChatDelta,
  type ChatDeltaShaper,
  type ChatToolCall,
  type ToolCallPlan,
  toolCallStream,
} from "../tool-calls/index.js";
import { chatFormat, type FinishReason, type ResponseIdentity } from "./openai-format.js";

/**
 * The chunks of a streamed chat answer under a tool plan: text as content deltas (through
 * `textChunk`, the route's serializer), tool calls as `delta.tool_calls` entries (OpenAI's
 * ChatCompletionMessageToolCallChunk), and `finish_reason: "tool_calls"` once a call was sent.
 */
export class ChatChunkShaper {
  readonly #shaper: ChatDeltaShaper | undefined;
  readonly #idn: ResponseIdentity;
  readonly #withUsageField: boolean;
  readonly #textChunk: (text: string) => string;

  constructor(plan: ToolCallPlan, idn: ResponseIdentity, withUsageField: boolean, textChunk: (text: string) => string) {
    this.#shaper = toolCallStream(plan);
    this.#idn = idn;
    this.#withUsageField = withUsageField;
    this.#textChunk = textChunk;
  }

  /** The chunks to send for the next piece of the answer (none while text is held back). */
  text(text: string): unknown[] {
    return this.#shaper ? this.#chunks(this.#shaper.push(text)) : [this.#textChunk(text)];
  }

  /** The chunks held until the end, and the finish reason to send. */
  end(finishReason: FinishReason): { chunks: unknown[]; finishReason: FinishReason } {
    if (!this.#shaper) return { chunks: [], finishReason };
    const chunks = this.#chunks(this.#shaper.finish());
    return { chunks, finishReason: this.#shaper.calledTools && finishReason === "stop" ? "tool_calls" : finishReason };
  }

  #chunks(deltas: readonly ChatDelta[]): unknown[] {
    return deltas.map((d) =>
      d.type === "content"
        ? this.#textChunk(d.text)
        : chatFormat.chunk(this.#idn, { tool_calls: d.calls }, null, this.#withUsageField),
    );
  }
}

/** A whole answer under a tool plan: content, tool calls and the finish reason (`tool_calls` when there are calls). */
export function chatAnswer(
  plan: ToolCallPlan,
  text: string,
  finishReason: FinishReason,
): { content: string | null; toolCalls: ChatToolCall[]; finishReason: FinishReason } {
  const { content, toolCalls } = answerWithToolCalls(plan, text);
  return { content, toolCalls, finishReason: toolCalls.length > 0 && finishReason === "stop" ? "tool_calls" : finishReason };
}
