import type { GenerationEnd, Usage } from "../generation.js";
import type { TokenLogprobEntry } from "../logprobs-format.js";
import type { ChatToolCall } from "../tool-calls/index.js";
import type { ResponseEcho } from "./responses-request.js";

/**
 * Builders for OpenAI Responses API objects, in the shapes of the spec's `Response`,
 * `OutputMessage`, `FunctionToolCall` and `ResponseUsage` schemas.
 */
export interface ResponseIdentity {
  /** `resp_…` */
  readonly id: string;
  /** `msg_…`, the output message's id. */
  readonly itemId: string;
  readonly createdAt: number;
  readonly model: string;
  readonly echo: ResponseEcho;
}

export type ItemStatus = "in_progress" | "completed" | "incomplete";

/** `completed`, or `incomplete` when the token budget (`max_output_tokens` or the context) cut the text. */
export function statusOf(end: GenerationEnd): "completed" | "incomplete" {
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

/** An answer's token log-probabilities as an `output_text` part has them (the spec's `LogProb`). */
export function outputLogprobs(entries: readonly TokenLogprobEntry[]) {
  return entries.map((e) => ({
    token: e.token,
    logprob: e.logprob,
    bytes: e.bytes,
    top_logprobs: e.top.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
  }));
}

/** A text delta's token log-probabilities (the spec's `ResponseLogProb`). */
export function deltaLogprobs(entries: readonly TokenLogprobEntry[]) {
  return entries.map((e) => ({
    token: e.token,
    logprob: e.logprob,
    top_logprobs: e.top.map((t) => ({ token: t.token, logprob: t.logprob })),
  }));
}

export function textPart(text: string, logprobs: readonly TokenLogprobEntry[] = []) {
  return { type: "output_text" as const, text, annotations: [], logprobs: outputLogprobs(logprobs) };
}

/** The assistant's message item; `text` undefined: no content part yet. */
export function messageItem(
  id: string,
  status: ItemStatus,
  text: string | undefined,
  logprobs: readonly TokenLogprobEntry[] = [],
) {
  return {
    id,
    type: "message" as const,
    role: "assistant" as const,
    status,
    content: text === undefined ? [] : [textPart(text, logprobs)],
  };
}

/** A `function_call` output item; its `id` is the call's id with `fc_` for `call_`. */
export function functionCallItem(call: ChatToolCall, status: ItemStatus) {
  return {
    id: call.id.replace(/^call_/, "fc_"),
    type: "function_call" as const,
    call_id: call.id,
    name: call.function.name,
    arguments: call.function.arguments,
    status,
  };
}

/** The output items of a whole answer: its text (unless it was only calls), then its calls. */
export function outputItems(
  idn: ResponseIdentity,
  content: string | null,
  calls: readonly ChatToolCall[],
  end: GenerationEnd,
  logprobs: readonly TokenLogprobEntry[] = [],
) {
  const status = statusOf(end);
  const items: unknown[] = [];
  if (content !== null && (content !== "" || calls.length === 0)) items.push(messageItem(idn.itemId, status, content, logprobs));
  for (const call of calls) items.push(functionCallItem(call, "completed"));
  return items;
}

/** The Response object; `end` absent: still in progress, with no output yet. */
export function responseObject(idn: ResponseIdentity, output: readonly unknown[], end: GenerationEnd | undefined) {
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
    output,
    parallel_tool_calls: e.parallelToolCalls,
    previous_response_id: null,
    reasoning: null,
    service_tier: "default" as const,
    store: false,
    temperature: e.temperature,
    text: { format: e.textFormat },
    tool_choice: e.toolChoice,
    tools: e.tools,
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
