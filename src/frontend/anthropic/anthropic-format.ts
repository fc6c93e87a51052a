import type { GenerationEnd, Usage } from "../generation.js";
import type { HttpError } from "../http-errors.js";
import type { ChatToolCall } from "../tool-calls/index.js";

/**
 * Builders for Anthropic Messages API objects and stream events, in the shapes of the
 * `@anthropic-ai/sdk` types (`Message`, `Usage`, `RawMessageStreamEvent`, `ErrorResponse`).
 */
export interface MessageIdentity {
  readonly id: string;
  readonly model: string;
}

export type StopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use";

/**
 * `stop_sequence` when a stop string ended the text, `max_tokens` when the budget did, `tool_use`
 * when the model ended its turn with tool calls, else `end_turn`.
 */
export function stopReasonOf(end: GenerationEnd, calledTools = false): { stop_reason: StopReason; stop_sequence: string | null } {
  if (end.stopSequence !== undefined) return { stop_reason: "stop_sequence", stop_sequence: end.stopSequence };
  if (end.finishReason === "length") return { stop_reason: "max_tokens", stop_sequence: null };
  return { stop_reason: calledTools ? "tool_use" : "end_turn", stop_sequence: null };
}

/** Anthropic's id for a call: `toolu_` for chat's `call_`. */
export const toolUseId = (call: { readonly id: string }): string => call.id.replace(/^call_/, "toolu_");

/** A `tool_use` content block; `input` is the arguments object (`{}` if they are not a JSON object). */
export function toolUseBlock(call: ChatToolCall) {
  let input: unknown = {};
  try {
    const parsed: unknown = JSON.parse(call.function.arguments);
    if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) input = parsed;
  } catch {
    // Not JSON (a call cut short): the input stays empty.
  }
  return { type: "tool_use" as const, id: toolUseId(call), name: call.function.name, input, caller: { type: "direct" as const } };
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
  /** The whole `Message` of a non-streamed request: its text (unless it was only calls), then its calls. */
  message(idn: MessageIdentity, text: string | null, calls: readonly ChatToolCall[], end: GenerationEnd) {
    const content: unknown[] =
      text !== null && (text !== "" || calls.length === 0) ? [{ type: "text", text, citations: null }] : [];
    content.push(...calls.map(toolUseBlock));
    return { ...messageObject(idn, content, anthropicUsage(end.usage)), ...stopReasonOf(end, calls.length > 0) };
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

  textBlockStart: (index: number) => ({
    type: "content_block_start" as const,
    index,
    content_block: { type: "text" as const, text: "" },
  }),
  toolUseBlockStart: (index: number, id: string, name: string) => ({
    type: "content_block_start" as const,
    index,
    content_block: { type: "tool_use" as const, id, name, input: {}, caller: { type: "direct" as const } },
  }),
  ping: { type: "ping" } as const,
  textDelta: (index: number, text: string) => ({
    type: "content_block_delta" as const,
    index,
    delta: { type: "text_delta" as const, text },
  }),
  inputJsonDelta: (index: number, partial: string) => ({
    type: "content_block_delta" as const,
    index,
    delta: { type: "input_json_delta" as const, partial_json: partial },
  }),
  blockStop: (index: number) => ({ type: "content_block_stop" as const, index }),

  /** `message_delta`: the stop reason and the final, cumulative usage. */
  messageDelta(end: GenerationEnd, calledTools: boolean) {
    const usage = anthropicUsage(end.usage);
    return {
      type: "message_delta" as const,
      delta: { ...stopReasonOf(end, calledTools), stop_details: null, container: null },
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
