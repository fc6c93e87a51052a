import { ArmatureError } from "../../protocol/index.js";
import {
  type ChatToolCall,
  parseMessageToolCalls,
  parseToolCallId,
  parseToolRequest,
  type ToolRequest,
} from "../tool-calls/index.js";
import { type CommonParams, parseCommonParams } from "./common-params.js";
import { asObject, invalid, optionalBoolean, optionalNumber } from "./field-checks.js";
import { chatFields, refuseUnservedFields } from "./request-fields.js";

export interface ChatMessage {
  readonly role: string;
  readonly content: string;
  /** An assistant message's earlier calls. */
  readonly toolCalls?: readonly ChatToolCall[] | undefined;
  /** A tool message: the call its content answers. */
  readonly toolCallId?: string | undefined;
}

export interface ChatRequest extends CommonParams {
  readonly kind: "chat";
  readonly messages: readonly ChatMessage[];
  /** `tools`, `tool_choice`, `parallel_tool_calls`; undefined when no tools are declared. */
  readonly tools: ToolRequest | undefined;
}

const ROLES = new Set(["system", "developer", "user", "assistant", "tool"]);

/** Validates a `POST /v1/chat/completions` body. */
export function parseChatRequest(raw: unknown): ChatRequest {
  const body = asObject(raw, "body");
  refuseUnservedFields(body, chatFields);
  const messages = parseMessages(body.messages);
  const common = parseCommonParams(body, ["max_tokens", "max_completion_tokens"]);
  return { kind: "chat", ...common, logprobs: parseChatLogprobs(body), messages, tools: parseToolRequest(body) };
}

/** `logprobs: true` asks for the chosen tokens' log-probabilities, `top_logprobs` (0..20, with it) for the likeliest alternatives. */
function parseChatLogprobs(body: Record<string, unknown>): { top: number } | undefined {
  const wanted = optionalBoolean(body, "logprobs") ?? false;
  const top = optionalNumber(body, "top_logprobs", { integer: true, min: 0, max: 20 });
  if (top !== undefined && top > 0 && !wanted) throw invalid("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  return wanted ? { top: top ?? 0 } : undefined;
}

/** Validates a chat request's `messages`: at least one, each with a role the templates know and text content. */
export function parseMessages(messages: unknown): ChatMessage[] {
  if (!Array.isArray(messages)) throw invalid("messages", "'messages' is required and must be an array");
  if (messages.length === 0) throw invalid("messages", "'messages' must hold at least one message");
  return messages.map((m, i) => parseMessage(m, i));
}

function parseMessage(value: unknown, index: number): ChatMessage {
  const param = `messages[${index}]`;
  const message = asObject(value, param);
  if (typeof message.role !== "string" || !ROLES.has(message.role)) {
    throw invalid(`${param}.role`, `'${param}.role' must be one of ${[...ROLES].join(", ")}`);
  }
  // The template gets a message's role, content and tool fields; anything else it would lose is refused by name.
  let toolCalls: ChatToolCall[] | undefined;
  let toolCallId: string | undefined;
  for (const [key, field] of Object.entries(message)) {
    if (key === "role" || key === "content" || field === null || field === undefined) continue;
    if (key === "tool_calls" && message.role === "assistant") {
      toolCalls = parseMessageToolCalls(field, `${param}.tool_calls`);
      continue;
    }
    if (key === "tool_call_id" && message.role === "tool") {
      toolCallId = parseToolCallId(field, `${param}.tool_call_id`);
      continue;
    }
    if (Array.isArray(field) && field.length === 0) continue;
    throw new ArmatureError("NOT_SUPPORTED", `'${param}.${key}' is not supported by this server yet; leave it out`, {
      param: `${param}.${key}`,
    });
  }
  return {
    role: message.role,
    content: parseContent(message.content, `${param}.content`, message.role),
    ...(toolCalls ? { toolCalls } : {}),
    ...(toolCallId ? { toolCallId } : {}),
  };
}

function parseContent(value: unknown, param: string, role: string): string {
  if (typeof value === "string") return value;
  if ((value === null || value === undefined) && role === "assistant") return "";
  if (Array.isArray(value)) {
    return value
      .map((part, i) => {
        const p = asObject(part, `${param}[${i}]`);
        if (p.type !== "text" || typeof p.text !== "string") {
          throw invalid(
            `${param}[${i}]`,
            `'${param}[${i}]' must be a text part ({"type":"text","text":…}); this model takes text only`,
          );
        }
        return p.text;
      })
      .join("");
  }
  throw invalid(param, `'${param}' must be a string or an array of text parts`);
}
