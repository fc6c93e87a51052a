import { ArmatureError, isArmatureError } from "../../protocol/index.js";
import type { ChatMessage } from "../requests/chat-request.js";
import { type CommonParams, parseCommonParams } from "../requests/common-params.js";
import { asObject, type Body, invalid, optionalNumber } from "../requests/field-checks.js";
import {
  absent,
  accepted,
  emptyObject,
  type FieldRule,
  honoured,
  isFalse,
  refusedUnless,
  refuseUnservedFields,
} from "../requests/request-fields.js";
import type { ToolRequest } from "../tool-calls/index.js";
import { appendCall, echoedTools, functionCallItem, functionCallOutputItem, parseResponsesTools } from "./responses-tools.js";

/** A `POST /v1/responses` body (OpenAI's Responses API), as the chat pipeline takes it. */
export interface ResponsesRequest {
  readonly params: CommonParams;
  /** `instructions` first (as a system message, when given), then the input items' messages. */
  readonly messages: readonly ChatMessage[];
  /** `tools`, `tool_choice`, `parallel_tool_calls`; undefined when no tools are declared. */
  readonly tools: ToolRequest | undefined;
  /** What the response object echoes back. */
  readonly echo: ResponseEcho;
}

/** Request fields the Response object repeats, as sent or at their defaults. */
export interface ResponseEcho {
  readonly instructions: string | null;
  readonly maxOutputTokens: number | null;
  readonly temperature: number;
  readonly topP: number;
  readonly metadata: Record<string, unknown>;
  /** As sent; default `"auto"` with tools, `"none"` without. */
  readonly toolChoice: unknown;
  /** The declared functions, in the spec's `FunctionTool` shape. */
  readonly tools: readonly unknown[];
  readonly parallelToolCalls: boolean;
  /** `text.format`, as sent (default `{type: "text"}`). */
  readonly textFormat: Record<string, unknown>;
  readonly user: string | null;
  readonly safetyIdentifier: string | null;
  readonly promptCacheKey: string | null;
}

const label = accepted("a caller's label for abuse monitoring; it does not change the output");
const cacheHint = accepted("a caching hint; every prompt's prefix is cached and routed to by the KV router anyway");

/** `POST /v1/responses`, every field of OpenAI's CreateResponse. */
export const responsesFields: Readonly<Record<string, FieldRule>> = {
  model: honoured,
  input: honoured,
  instructions: honoured,
  max_output_tokens: honoured,
  temperature: honoured,
  top_p: honoured,
  stream: honoured,
  text: honoured,
  metadata: accepted("echoed in the response; nothing is stored, and it does not change the output"),
  user: label,
  safety_identifier: label,
  prompt_cache_key: cacheHint,
  prompt_cache_retention: cacheHint,
  prompt_cache_options: cacheHint,
  tools: honoured,
  tool_choice: honoured,
  parallel_tool_calls: honoured,
  max_tool_calls: accepted("only bounds calls to built-in tools, which are refused (function tools are served)"),
  store: refusedUnless("false (nothing is stored)", isFalse),
  previous_response_id: refusedUnless("null (nothing is stored; send the conversation as input)", absent),
  conversation: refusedUnless("null (nothing is stored; send the conversation as input)", absent),
  background: refusedUnless("false", isFalse),
  top_logprobs: honoured,
  include: honoured,
  prompt: refusedUnless("null", absent),
  reasoning: refusedUnless("null", (v) => absent(v) || emptyObject(v)),
  service_tier: refusedUnless('"auto" or "default"', (v) => absent(v) || v === "auto" || v === "default"),
  truncation: refusedUnless('"disabled"', (v) => absent(v) || v === "disabled"),
  stream_options: refusedUnless('{"include_obfuscation": false}', (v) => absent(v) || noObfuscation(v)),
  context_management: refusedUnless("null", absent),
  moderation: refusedUnless("null", absent),
};

function noObfuscation(v: unknown): boolean {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
  return Object.entries(v).every(([key, value]) => key === "include_obfuscation" && isFalse(value));
}

/** Validates a `POST /v1/responses` body; throws a 400 naming the field. */
export function parseResponsesRequest(raw: unknown): ResponsesRequest {
  const body = asObject(raw, "body");
  refuseUnservedFields(body, responsesFields);
  const instructions = optionalString(body, "instructions");
  const input = parseInput(body.input);
  const messages = instructions === undefined ? input : [{ role: "system", content: instructions }, ...input];
  const maxOutputTokens = optionalNumber(body, "max_output_tokens", { integer: true, min: 1 });
  const temperature = optionalNumber(body, "temperature", { min: 0, max: 2 });
  const topP = optionalNumber(body, "top_p", { min: 0, max: 1 });
  const text = absent(body.text) ? {} : asObject(body.text, "text");
  const textFormat = absent(text.format) ? { type: "text" } : asObject(text.format, "text.format");
  for (const key of Object.keys(text)) {
    if (key === "format" || (key === "verbosity" && absent(text.verbosity))) continue;
    throw new ArmatureError("NOT_SUPPORTED", `'text.${key}' is not supported by this server yet; leave it out`, {
      param: `text.${key}`,
    });
  }
  const common = renamingFormatErrors(() =>
    parseCommonParams(
      {
        model: body.model,
        stream: body.stream,
        max_tokens: maxOutputTokens,
        temperature,
        top_p: topP,
        response_format: asResponseFormat(textFormat),
      },
      ["max_tokens"],
    ),
  );
  const metadata = absent(body.metadata) ? {} : asObject(body.metadata, "metadata");
  const tools = parseResponsesTools(body);
  const logprobs = parseLogprobs(body, tools);
  return {
    params: logprobs ? { ...common, logprobs } : common,
    messages,
    tools,
    echo: {
      instructions: instructions ?? null,
      maxOutputTokens: maxOutputTokens ?? null,
      temperature: temperature ?? 1,
      topP: topP ?? 1,
      metadata,
      toolChoice: body.tool_choice ?? (tools ? "auto" : "none"),
      tools: echoedTools(body),
      parallelToolCalls: body.parallel_tool_calls !== false,
      textFormat,
      user: optionalString(body, "user") ?? null,
      safetyIdentifier: optionalString(body, "safety_identifier") ?? null,
      promptCacheKey: optionalString(body, "prompt_cache_key") ?? null,
    },
  };
}

/** The `include` value that asks for the answer's token log-probabilities. */
export const OUTPUT_TEXT_LOGPROBS = "message.output_text.logprobs";

/**
 * `include: ["message.output_text.logprobs"]` asks for the answer's token log-probabilities,
 * `top_logprobs` (0..20, with it) for the likeliest alternatives. Other `include` values name
 * output that is never made here (built-in tools, images, reasoning) and are refused.
 */
function parseLogprobs(body: Body, tools: ToolRequest | undefined): { readonly top: number } | undefined {
  const include = body.include;
  if (!absent(include) && !(Array.isArray(include) && include.every((v) => typeof v === "string"))) {
    throw invalid("include", "'include' must be an array of strings");
  }
  const other = (include as string[] | undefined)?.find((v) => v !== OUTPUT_TEXT_LOGPROBS);
  if (other !== undefined) {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `'include' value ${JSON.stringify(other)} is not supported by this server; only "${OUTPUT_TEXT_LOGPROBS}" is`,
      { param: "include" },
    );
  }
  const wanted = (include as string[] | undefined)?.includes(OUTPUT_TEXT_LOGPROBS) ?? false;
  const top = optionalNumber(body, "top_logprobs", { integer: true, min: 0, max: 20 }) ?? 0;
  if (top > 0 && !wanted) throw invalid("top_logprobs", `'top_logprobs' needs 'include': ["${OUTPUT_TEXT_LOGPROBS}"]`);
  if (!wanted) return undefined;
  if (tools && tools.choice.type !== "none") {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `'include' "${OUTPUT_TEXT_LOGPROBS}" with tools is not supported yet; leave one out (or send tool_choice "none")`,
      { param: "include" },
    );
  }
  return { top };
}

function optionalString(body: Body, key: string): string | undefined {
  const value = body[key];
  if (absent(value)) return undefined;
  if (typeof value !== "string") throw invalid(key, `'${key}' must be a string`);
  return value;
}

/** `text.format` in the chat shape (`response_format`), whose reader checks it. */
function asResponseFormat(format: Body): unknown {
  if (format.type !== "json_schema") return format;
  const { type, name, description, strict, schema, ...rest } = format;
  const extra = Object.keys(rest)[0];
  if (extra !== undefined) throw invalid(`text.format.${extra}`, `Unrecognized request argument supplied: text.format.${extra}`);
  return { type, json_schema: { name, description, strict, schema } };
}

/** Errors of the chat-shaped `response_format` named as the Responses field they came from. */
function renamingFormatErrors<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (!isArmatureError(error) || !error.param?.startsWith("response_format")) throw error;
    const rename = (s: string): string =>
      s.replaceAll("response_format.json_schema", "text.format").replaceAll("response_format", "text.format");
    throw new ArmatureError(error.code, rename(error.message), { param: rename(error.param), cause: error });
  }
}

const ROLES = new Set(["user", "assistant", "system", "developer"]);

/** `input`: a string (one user message) or a list of message items. */
function parseInput(value: unknown): ChatMessage[] {
  if (typeof value === "string") return [{ role: "user", content: value }];
  if (!Array.isArray(value)) throw invalid("input", "'input' is required and must be a string or an array of input items");
  if (value.length === 0) throw invalid("input", "'input' must hold at least one item");
  const messages: ChatMessage[] = [];
  value.forEach((item, i) => {
    const param = `input[${i}]`;
    const type = asObject(item, param).type;
    if (type === "function_call") appendCall(messages, functionCallItem(item as Body, param));
    else if (type === "function_call_output") messages.push(functionCallOutputItem(item as Body, param));
    else messages.push(parseItem(item, param));
  });
  return messages;
}

function parseItem(value: unknown, param: string): ChatMessage {
  const item = asObject(value, param);
  if (item.type !== undefined && item.type !== "message") {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `'${param}': input items of type ${JSON.stringify(item.type)} are not supported by this server yet; send message, function_call or function_call_output items`,
      { param: `${param}.type` },
    );
  }
  for (const [key, field] of Object.entries(item)) {
    // `id` and `status` come with output items sent back as input; they do not change the prompt.
    if (["type", "role", "content", "id", "status"].includes(key) || (key === "phase" && absent(field))) continue;
    throw new ArmatureError("NOT_SUPPORTED", `'${param}.${key}' is not supported by this server yet; leave it out`, {
      param: `${param}.${key}`,
    });
  }
  if (typeof item.role !== "string" || !ROLES.has(item.role)) {
    throw invalid(`${param}.role`, `'${param}.role' must be one of ${[...ROLES].join(", ")}`);
  }
  return { role: item.role, content: parseContent(item.content, `${param}.content`) };
}

function parseContent(value: unknown, param: string): string {
  if (typeof value === "string") return value;
  if (!Array.isArray(value)) throw invalid(param, `'${param}' must be a string or an array of content parts`);
  return value
    .map((part, i) => {
      const p = asObject(part, `${param}[${i}]`);
      if (p.type !== "input_text" && p.type !== "output_text") {
        throw new ArmatureError(
          "NOT_SUPPORTED",
          `'${param}[${i}]': content parts of type ${JSON.stringify(p.type)} are not supported by this server yet; send input_text parts`,
          { param: `${param}[${i}].type` },
        );
      }
      if (typeof p.text !== "string") throw invalid(`${param}[${i}].text`, `'${param}[${i}].text' must be a string`);
      // A caching hint on input; an earlier answer's annotations and logprobs, which are not prompt text.
      const known =
        p.type === "input_text" ? ["type", "text", "prompt_cache_breakpoint"] : ["type", "text", "annotations", "logprobs"];
      const extra = Object.keys(p).find((key) => !known.includes(key));
      if (extra !== undefined) {
        throw new ArmatureError("NOT_SUPPORTED", `'${param}[${i}].${extra}' is not supported by this server yet; leave it out`, {
          param: `${param}[${i}].${extra}`,
        });
      }
      return p.text;
    })
    .join("");
}
