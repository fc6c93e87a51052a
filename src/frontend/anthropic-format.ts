import type { GenerationEnd, Usage } from "./generation.js";
import type { HttpError } from "./http-errors.js";

/**
 * Builders for Anthropic Messages API objects and stream events, in the shapes of the
 * `@anthropic-ai/sdk` types (`Message`, `Usage`, `RawMessageStreamEvent`, `ErrorResponse`).
 */
export interface MessageIdentity {
  readonly id: string;
  readonly model: string;
}

export type StopReason = "end_turn" | "max_tokens" | "stop_sequence";

/** `stop_sequence` when a stop string ended the text, `max_tokens` when the budget did, else `end_turn`. */
export function stopReasonOf(end: GenerationEnd): { stop_reason: StopReason; stop_sequence: string | null } {
  if (end.stopSequence !== undefined) return { stop_reason: "stop_sequence", stop_sequence: end.stopSequence };
  return { stop_reason: end.finishReason === "length" ? "max_tokens" : "end_turn", stop_sequence: null };
}

/**
 * Anthropic's usage: `input_tokens` counts the prompt tokens not read from the cache, so that
 * `input_tokens + cache_read_input_tokens` is the whole prompt (what `count_tokens` answers).
 * Nothing is written to a cache a client controls, so the creation counters are 0.
 */
export function anthropicUsage(usage: Usage) {
  const cached = usage.prompt_tokens_details.cached_tokens;
  return {
    input_tokens: usage.prompt_tokens - cached,
    output_tokens: usage.completion_tokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: cached,
    cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    inference_geo: null,
    output_tokens_details: null,
    server_tool_use: null,
    service_tier: "standard" as const,
    speed: null,
  };
}

function messageObject(idn: MessageIdentity, content: readonly unknown[], usage: ReturnType<typeof anthropicUsage>) {
  return {
    id: idn.id,
    type: "message" as const,
    role: "assistant" as const,
    model: idn.model,
    content,
    stop_reason: null as StopReason | null,
    stop_sequence: null as string | null,
    stop_details: null,
    container: null,
    diagnostics: null,
    usage,
  };
}

export const anthropicFormat = {
  /** The whole `Message` of a non-streamed request. */
  message(idn: MessageIdentity, text: string, end: GenerationEnd) {
    return {
      ...messageObject(idn, [{ type: "text", text, citations: null }], anthropicUsage(end.usage)),
      ...stopReasonOf(end),
    };
  },

  /**
   * `message_start`: the message with no content yet. Which prompt tokens came from the cache is
   * known only at the end, so the start counts the whole prompt as input and `message_delta`
   * carries the split.
   */
  messageStart(idn: MessageIdentity, promptTokens: number) {
    const usage = anthropicUsage({
      prompt_tokens: promptTokens,
      completion_tokens: 0,
      total_tokens: promptTokens,
      prompt_tokens_details: { cached_tokens: 0 },
    });
    return { type: "message_start" as const, message: messageObject(idn, [], usage) };
  },

  textBlockStart: { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } } as const,
  ping: { type: "ping" } as const,
  textDelta: (text: string) => ({ type: "content_block_delta" as const, index: 0, delta: { type: "text_delta" as const, text } }),
  textBlockStop: { type: "content_block_stop", index: 0 } as const,

  /** `message_delta`: the stop reason and the final, cumulative usage. */
  messageDelta(end: GenerationEnd) {
    const usage = anthropicUsage(end.usage);
    return {
      type: "message_delta" as const,
      delta: { ...stopReasonOf(end), stop_details: null, container: null },
      usage: {
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens_details: null,
        server_tool_use: null,
      },
    };
  },

  messageStop: { type: "message_stop" } as const,
};

/** Anthropic's error types, by HTTP status (its errors page); 503 is `overloaded_error`, Anthropic's 529. */
function errorType(status: number): string {
  switch (status) {
    case 400:
      return "invalid_request_error";
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
      return "overloaded_error";
    case 504:
      return "timeout_error";
    default:
      return "api_error";
  }
}

/** Anthropic's error body, `{"type":"error","error":{"type","message"},"request_id"}`, for an HTTP error. */
export function anthropicError(status: number, message: string, requestId: string | null) {
  return { type: "error" as const, error: { type: errorType(status), message }, request_id: requestId };
}

/** `anthropicError` of a mapped domain error. */
export function anthropicErrorOf(http: HttpError, requestId: string | null) {
  return anthropicError(http.status, http.body.error.message, requestId);
}
