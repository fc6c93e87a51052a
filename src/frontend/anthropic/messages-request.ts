import { ArmatureError, isArmatureError } from "../../protocol/index.js";
import type { ChatMessage } from "../requests/chat-request.js";
import { type CommonParams, parseCommonParams } from "../requests/common-params.js";
import { asObject, type Body, invalid, optionalNumber, requiredString } from "../requests/field-checks.js";
import {
  absent,
  accepted,
  emptyList,
  type FieldRule,
  honoured,
  refusedUnless,
  refuseUnservedFields,
} from "../requests/request-fields.js";
import { MAX_STOP_LENGTH } from "../stop-matcher.js";
import type { ChatToolCall, ToolRequest } from "../tool-calls/index.js";
import { parseAnthropicTools, toolResultMessage, toolUseCall } from "./anthropic-tools.js";

/** A `POST /v1/messages` body (Anthropic's Messages API), as the chat pipeline takes it. */
export interface MessagesRequest {
  readonly params: CommonParams;
  /** The `system` prompt first (when given), then the conversation, for the chat template. */
  readonly messages: readonly ChatMessage[];
  /** `tools` and `tool_choice`; undefined when no tools are declared. */
  readonly tools: ToolRequest | undefined;
}

/** A `POST /v1/messages/count_tokens` body. */
export interface CountTokensRequest {
  readonly model: string;
  readonly messages: readonly ChatMessage[];
  readonly tools: ToolRequest | undefined;
}

/** Most `stop_sequences` a request may give (Anthropic sets no documented limit; each costs per character). */
export const MAX_STOP_SEQUENCES = 16;

const typeIs =
  (type: string) =>
  (v: unknown): boolean =>
    absent(v) || (typeof v === "object" && (v as { type?: unknown }).type === type);

/** Fields both Anthropic routes take (`MessageCountTokensParams`). */
const promptFields: Record<string, FieldRule> = {
  model: honoured,
  messages: honoured,
  system: honoured,
  cache_control: accepted("a caching hint; every prompt's prefix is cached and routed to by the KV router anyway"),
  speed: refusedUnless('"standard"', (v) => absent(v) || v === "standard"),
  thinking: refusedUnless('{"type":"disabled"}', typeIs("disabled")),
  tool_choice: honoured,
  tools: honoured,
};

/**
 * `POST /v1/messages`: every body field of the Anthropic SDK's `MessageCreateParams`, and the
 * sampling fields the API documents (`temperature`, `top_p`, `top_k`).
 */
export const messagesFields: Readonly<Record<string, FieldRule>> = {
  ...promptFields,
  output_config: honoured,
  max_tokens: honoured,
  stop_sequences: honoured,
  stream: honoured,
  temperature: honoured,
  top_p: honoured,
  top_k: honoured,
  metadata: accepted("`user_id`, a caller's label; it does not change the output"),
  service_tier: refusedUnless('"auto" or "standard_only"', (v) => absent(v) || v === "auto" || v === "standard_only"),
  container: refusedUnless("null", absent),
  diagnostics: refusedUnless("null", absent),
  inference_geo: refusedUnless("null", absent),
};

/** `POST /v1/messages/count_tokens`: every body field of the SDK's `MessageCountTokensParams`. */
export const countTokensFields: Readonly<Record<string, FieldRule>> = {
  ...promptFields,
  output_config: accepted(
    "checked as POST /v1/messages checks it; its format constrains decoding, not the prompt, so the count is the same",
  ),
};

/** Validates a `POST /v1/messages` body; throws a 400 naming the field. */
export function parseMessagesRequest(raw: unknown): MessagesRequest {
  const body = asObject(raw, "body");
  refuseUnservedFields(body, messagesFields);
  const messages = parseConversation(body);
  if (body.max_tokens === undefined || body.max_tokens === null) throw invalid("max_tokens", "'max_tokens' is required");
  const maxTokens = optionalNumber(body, "max_tokens", { integer: true, min: 1 });
  const temperature = optionalNumber(body, "temperature", { min: 0, max: 1 });
  const topP = optionalNumber(body, "top_p", { min: 0, max: 1 });
  const topK = optionalNumber(body, "top_k", { integer: true, min: 1 });
  const stop = parseStopSequences(body.stop_sequences);
  const responseFormat = parseOutputConfig(body.output_config);
  // The shared reader fills what these routes leave at their defaults; values were checked above
  // under their Anthropic names.
  const common = renamingFormatErrors(() =>
    parseCommonParams(
      {
        model: body.model,
        stream: body.stream,
        max_tokens: maxTokens,
        temperature,
        top_p: topP,
        top_k: topK,
        response_format: responseFormat,
      },
      ["max_tokens"],
    ),
  );
  return { params: { ...common, stop }, messages, tools: parseAnthropicTools(body) };
}

/** Validates a `POST /v1/messages/count_tokens` body. */
export function parseCountTokensRequest(raw: unknown): CountTokensRequest {
  const body = asObject(raw, "body");
  refuseUnservedFields(body, countTokensFields);
  parseOutputConfig(body.output_config);
  return { model: requiredString(body, "model"), messages: parseConversation(body), tools: parseAnthropicTools(body) };
}

function parseConversation(body: Body): ChatMessage[] {
  requiredString(body, "model");
  const system = absent(body.system) ? undefined : textOf(body.system, "system");
  const list = body.messages;
  if (!Array.isArray(list)) throw invalid("messages", "'messages' is required and must be an array");
  if (list.length === 0) throw invalid("messages", "'messages' must hold at least one message");
  const messages = list.flatMap((m, i) => parseMessage(m, i));
  if (messages.at(-1)?.role === "assistant") {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `'messages[${list.length - 1}]': a final assistant message (prefill) is not supported by this server; end with a user message`,
      { param: `messages[${list.length - 1}]` },
    );
  }
  return system === undefined ? messages : [{ role: "system", content: system }, ...messages];
}

const ROLES = new Set(["user", "assistant", "system"]);

/**
 * One message as chat messages: its text, an assistant's `tool_use` blocks as its tool calls, a
 * user's `tool_result` blocks as tool messages (before the user's own text, when it has any).
 */
function parseMessage(value: unknown, index: number): ChatMessage[] {
  const param = `messages[${index}]`;
  const message = asObject(value, param);
  for (const key of Object.keys(message)) {
    if (key !== "role" && key !== "content") {
      throw invalid(`${param}.${key}`, `'${param}.${key}': Extra inputs are not permitted`);
    }
  }
  if (typeof message.role !== "string" || !ROLES.has(message.role)) {
    throw invalid(`${param}.role`, `'${param}.role' must be one of ${[...ROLES].join(", ")}`);
  }
  const role = message.role;
  const content = message.content;
  if (!Array.isArray(content)) return [{ role, content: textOf(content, `${param}.content`) }];
  let text = "";
  const calls: ChatToolCall[] = [];
  const results: ChatMessage[] = [];
  content.forEach((value, i) => {
    const at = `${param}.content[${i}]`;
    const block = asObject(value, at);
    if (block.type === "tool_use" && role === "assistant") calls.push(toolUseCall(block, at));
    else if (block.type === "tool_result" && role === "user") results.push(toolResultMessage(block, at, textOf));
    else text += textBlock(block, at);
  });
  if (calls.length > 0) return [{ role, content: text, toolCalls: calls }];
  return results.length > 0 && text === "" ? results : [...results, { role, content: text }];
}

/** A string, or text blocks joined; any other block type is refused naming it. */
function textOf(value: unknown, param: string): string {
  if (typeof value === "string") return value;
  if (!Array.isArray(value)) throw invalid(param, `'${param}' must be a string or an array of content blocks`);
  return value.map((block, i) => textBlock(block, `${param}[${i}]`)).join("");
}

function textBlock(value: unknown, param: string): string {
  const block = asObject(value, param);
  if (block.type !== "text") {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `'${param}': content blocks of type ${JSON.stringify(block.type)} are not supported by this server yet; send text blocks`,
      { param: `${param}.type` },
    );
  }
  if (typeof block.text !== "string") throw invalid(`${param}.text`, `'${param}.text' must be a string`);
  for (const [key, field] of Object.entries(block)) {
    if (key === "type" || key === "text" || key === "cache_control") continue;
    if (key === "citations" && emptyList(field)) continue;
    throw new ArmatureError("NOT_SUPPORTED", `'${param}.${key}' is not supported by this server yet; leave it out`, {
      param: `${param}.${key}`,
    });
  }
  return block.text;
}

function parseStopSequences(value: unknown): string[] {
  if (absent(value)) return [];
  if (!Array.isArray(value) || !value.every((s) => typeof s === "string")) {
    throw invalid("stop_sequences", "'stop_sequences' must be an array of strings");
  }
  if (value.length > MAX_STOP_SEQUENCES) {
    throw invalid("stop_sequences", `'stop_sequences' may hold at most ${MAX_STOP_SEQUENCES} strings`);
  }
  if (value.some((s) => s.length > MAX_STOP_LENGTH)) {
    throw invalid("stop_sequences", `each of 'stop_sequences' must be at most ${MAX_STOP_LENGTH} characters`);
  }
  return value;
}

/**
 * `output_config`: its `format` (`{type: "json_schema", schema}`) in the chat shape
 * (`response_format`), whose reader checks it; `effort` is refused unless null.
 */
function parseOutputConfig(value: unknown): unknown {
  if (absent(value)) return undefined;
  const config = asObject(value, "output_config");
  for (const [key, field] of Object.entries(config)) {
    if (key === "format" || absent(field)) continue;
    throw new ArmatureError("NOT_SUPPORTED", `'output_config.${key}' is not supported by this server yet; leave it out`, {
      param: `output_config.${key}`,
    });
  }
  if (absent(config.format)) return undefined;
  const format = asObject(config.format, "output_config.format");
  if (format.type !== "json_schema")
    throw invalid("output_config.format.type", "'output_config.format.type' must be json_schema");
  const extra = Object.keys(format).find((key) => key !== "type" && key !== "schema");
  if (extra !== undefined)
    throw invalid(`output_config.format.${extra}`, `'output_config.format.${extra}': Extra inputs are not permitted`);
  return { type: "json_schema", json_schema: { name: "output", schema: asObject(format.schema, "output_config.format.schema") } };
}

/** Errors of the chat-shaped `response_format` named as the Anthropic field they came from. */
function renamingFormatErrors<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (!isArmatureError(error) || !error.param?.startsWith("response_format")) throw error;
    const rename = (s: string): string =>
      s.replaceAll("response_format.json_schema", "output_config.format").replaceAll("response_format", "output_config.format");
    throw new ArmatureError(error.code, rename(error.message), { param: rename(error.param), cause: error });
  }
}
