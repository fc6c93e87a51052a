import { ArmatureError, isArmatureError } from "../../protocol/index.js";
import type { ChatMessage } from "../requests/chat-request.js";
import { asObject, type Body, invalid } from "../requests/field-checks.js";
import { absent } from "../requests/request-fields.js";
import { type ChatToolCall, parseToolRequest, type ToolRequest } from "../tool-calls/index.js";

/**
 * Anthropic's client tools, read by the chat route's reader: a tool is `{name, description,
 * input_schema}` (type absent or `custom`), `tool_choice` is `{type: auto | any | tool | none}`
 * with `disable_parallel_tool_use`. Server tools (`bash_…`, `web_search_…`, …) are refused naming
 * `tools[i].type`; errors name Anthropic's fields.
 */
export function parseAnthropicTools(body: Body): ToolRequest | undefined {
  const tools = Array.isArray(body.tools) ? body.tools.map((t, i) => chatTool(t, `tools[${i}]`)) : body.tools;
  const { choice, parallel } = chatToolChoice(body.tool_choice);
  try {
    return parseToolRequest({ tools, tool_choice: choice, parallel_tool_calls: parallel });
  } catch (error) {
    if (!isArmatureError(error)) throw error;
    const rename = (s: string): string =>
      s
        .replace(/tools\[(\d+)\]\.function\.parameters/g, "tools[$1].input_schema")
        .replace(/tools\[(\d+)\]\.function\./g, "tools[$1].")
        .replaceAll("tool_choice.function.", "tool_choice.");
    throw new ArmatureError(error.code, rename(error.message), { param: rename(error.param ?? ""), cause: error });
  }
}

function chatTool(value: unknown, param: string): unknown {
  const tool = asObject(value, param);
  if (!absent(tool.type) && tool.type !== "custom") {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `'${param}.type' ${JSON.stringify(tool.type)}: server tools are not served; declare client tools ({"name","description","input_schema"})`,
      { param: `${param}.type` },
    );
  }
  refuseExtraFields(tool, ["type", "name", "description", "input_schema", "cache_control"], param);
  if (absent(tool.input_schema)) throw invalid(`${param}.input_schema`, `'${param}.input_schema' is required`);
  return { type: "function", function: { name: tool.name, description: tool.description, parameters: tool.input_schema } };
}

function chatToolChoice(value: unknown): { choice: unknown; parallel: boolean | undefined } {
  if (absent(value)) return { choice: undefined, parallel: undefined };
  const choice = asObject(value, "tool_choice");
  refuseExtraFields(choice, ["type", "name", "disable_parallel_tool_use"], "tool_choice");
  const disable = choice.disable_parallel_tool_use;
  if (!absent(disable) && typeof disable !== "boolean") {
    throw invalid("tool_choice.disable_parallel_tool_use", "'tool_choice.disable_parallel_tool_use' must be a boolean");
  }
  const parallel = disable === true ? false : undefined;
  switch (choice.type) {
    case "auto":
      return { choice: "auto", parallel };
    case "any":
      return { choice: "required", parallel };
    case "none":
      return { choice: "none", parallel };
    case "tool":
      return { choice: { type: "function", function: { name: choice.name } }, parallel };
    default:
      throw invalid("tool_choice.type", "'tool_choice.type' must be one of auto, any, tool, none");
  }
}

/** A `tool_use` block of an assistant message (an earlier call) as a chat tool call. */
export function toolUseCall(block: Body, param: string): ChatToolCall {
  // A call sent back as the SDK returned it carries `caller: {type: "direct"}`, as client tools' calls are made.
  const caller = block.caller;
  if (!absent(caller) && (caller as { type?: unknown }).type !== "direct") {
    throw new ArmatureError("NOT_SUPPORTED", `'${param}.caller': only calls made directly by the model are served`, {
      param: `${param}.caller`,
    });
  }
  refuseExtraFields(block, ["type", "id", "name", "input", "cache_control", "caller"], param);
  if (typeof block.id !== "string" || block.id === "") throw invalid(`${param}.id`, `'${param}.id' must be a non-empty string`);
  if (typeof block.name !== "string" || block.name === "")
    throw invalid(`${param}.name`, `'${param}.name' must be a non-empty string`);
  const input = asObject(block.input ?? {}, `${param}.input`);
  return { id: block.id, type: "function", function: { name: block.name, arguments: JSON.stringify(input) } };
}

/** A `tool_result` block of a user message (a call's result) as a tool message. */
export function toolResultMessage(block: Body, param: string, textOf: (value: unknown, param: string) => string): ChatMessage {
  refuseExtraFields(block, ["type", "tool_use_id", "content", "is_error", "cache_control"], param);
  if (typeof block.tool_use_id !== "string" || block.tool_use_id === "") {
    throw invalid(`${param}.tool_use_id`, `'${param}.tool_use_id' must be the id of the tool_use block it answers`);
  }
  const content = absent(block.content) ? "" : textOf(block.content, `${param}.content`);
  return { role: "tool", content: block.is_error === true ? `Error: ${content}` : content, toolCallId: block.tool_use_id };
}

function refuseExtraFields(object: Body, known: readonly string[], param: string): void {
  for (const [key, value] of Object.entries(object)) {
    if (known.includes(key) || absent(value)) continue;
    throw new ArmatureError("NOT_SUPPORTED", `'${param}.${key}' is not supported by this server yet; leave it out`, {
      param: `${param}.${key}`,
    });
  }
}
