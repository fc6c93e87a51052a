import type { GenerationEnd, Usage } from "./generation.js";
import type { ResponseEcho } from "./requests/responses-request.js";

/**
 * Builders for OpenAI Responses API objects and stream events, in the shapes of the spec's
 * `Response`, `OutputMessage`, `ResponseUsage` and `Response*Event` schemas.
 */
export interface ResponseIdentity {
  /** `resp_…` */
  readonly id: string;
  /** `msg_…`, the one output message's id. */
  readonly itemId: string;
  readonly createdAt: number;
  readonly model: string;
  readonly echo: ResponseEcho;
}

type Status = "in_progress" | "completed" | "incomplete";

/** `completed`, or `incomplete` when the token budget (`max_output_tokens` or the context) cut the text. */
export function statusOf(end: GenerationEnd): Status {
  return end.finishReason === "length" && end.stopSequence === undefined ? "incomplete" : "completed";
}

export function responsesUsage(usage: Usage) {
  return {
    input_tokens: usage.prompt_tokens,
    input_tokens_details: { cached_tokens: usage.prompt_tokens_details.cached_tokens, cache_write_tokens: 0 },
    output_tokens: usage.completion_tokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.total_tokens,
  };
}

function textPart(text: string) {
  return { type: "output_text" as const, text, annotations: [], logprobs: [] };
}

function messageItem(idn: ResponseIdentity, status: Status, content: readonly unknown[]) {
  return { id: idn.itemId, type: "message" as const, role: "assistant" as const, status, content };
}

/** The Response object; `end` absent: still in progress, with no output yet. */
function responseObject(idn: ResponseIdentity, text: string, end: GenerationEnd | undefined) {
  const status = end ? statusOf(end) : "in_progress";
  const e = idn.echo;
  return {
    id: idn.id,
    object: "response" as const,
    created_at: idn.createdAt,
    status,
    completed_at: status === "completed" ? Math.floor(Date.now() / 1000) : null,
    error: null,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" as const } : null,
    instructions: e.instructions,
    max_output_tokens: e.maxOutputTokens,
    model: idn.model,
    output: end ? [messageItem(idn, status, [textPart(text)])] : [],
    parallel_tool_calls: e.parallelToolCalls,
    previous_response_id: null,
    reasoning: null,
    service_tier: "default" as const,
    store: false,
    temperature: e.temperature,
    text: { format: e.textFormat },
    tool_choice: e.toolChoice,
    tools: [],
    top_p: e.topP,
    truncation: "disabled" as const,
    // The spec's `usage` is not nullable: a response in progress leaves it out.
    ...(end ? { usage: responsesUsage(end.usage) } : {}),
    metadata: e.metadata,
    background: false,
    safety_identifier: e.safetyIdentifier,
    prompt_cache_key: e.promptCacheKey,
    ...(e.user === null ? {} : { user: e.user }),
  };
}

export const responsesFormat = {
  /** The whole Response of a non-streamed request. */
  response: (idn: ResponseIdentity, text: string, end: GenerationEnd) => responseObject(idn, text, end),

  /** The Responses stream, event by event, each numbered in order from 0. */
  stream(idn: ResponseIdentity) {
    let sequence = 0;
    const event = <T extends { type: string }>(body: T) => ({ ...body, sequence_number: sequence++ });
    const at = { item_id: idn.itemId, output_index: 0, content_index: 0 };
    return {
      created: () => event({ type: "response.created", response: responseObject(idn, "", undefined) }),
      inProgress: () => event({ type: "response.in_progress", response: responseObject(idn, "", undefined) }),
      itemAdded: () => event({ type: "response.output_item.added", output_index: 0, item: messageItem(idn, "in_progress", []) }),
      partAdded: () => event({ type: "response.content_part.added", ...at, part: textPart("") }),
      textDelta: (delta: string) => event({ type: "response.output_text.delta", ...at, delta, logprobs: [] }),
      /** The closing events, in order, after the last delta. */
      closing(text: string, end: GenerationEnd) {
        const status = statusOf(end);
        return [
          event({ type: "response.output_text.done", ...at, text, logprobs: [] }),
          event({ type: "response.content_part.done", ...at, part: textPart(text) }),
          event({ type: "response.output_item.done", output_index: 0, item: messageItem(idn, status, [textPart(text)]) }),
          event({
            type: status === "completed" ? "response.completed" : "response.incomplete",
            response: responseObject(idn, text, end),
          }),
        ];
      },
      /** An `error` event, for a failure after the stream began. */
      error: (error: { message: string; code: string | null; param: string | null }) =>
        event({ type: "error", code: error.code, message: error.message, param: error.param }),
    };
  },
};
