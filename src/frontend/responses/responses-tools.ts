import { ArmatureError, isArmatureError } from "../../protocol/index.js";
import type { ChatMessage } from "../requests/chat-request.js";
import { asObject, type Body, invalid } from "../requests/field-checks.js";
import { absent } from "../requests/request-fields.js";
import { parseToolRequest, type ToolRequest } from "../tool-calls/index.js";

/**
 * The Responses API's function tools, read by the chat route's reader: Responses declares a
 * function flat (`{type, name, description, parameters, strict}`) and names one in `tool_choice` as
 * `{type: "function", name}`, where chat nests both under `function`. Errors name the Responses
 * fields. Tools of other types (web search, file search, MCP, custom, …) are refused by name.
 */
export function parseResponsesTools(body: Body): ToolRequest | undefined {
  const tools = Array.isArray(body.tools) ? body.tools.map((t, i) => chatTool(t, `tools[${i}]`)) : body.tools;
  const toolChoice = chatToolChoice(body.tool_choice);
  try {
    return parseToolRequest({ tools, tool_choice: toolChoice, parallel_tool_calls: body.parallel_tool_calls });
  } catch (error) {
    if (!isArmatureError(error)) throw error;
    const rename = (s: string): string =>
      s.replace(/tools\[(\d+)\]\.function\./g, "tools[$1].").replaceAll("tool_choice.function.", "tool_choice.");
    throw new ArmatureError(error.code, rename(error.message), { param: rename(error.param ?? ""), cause: error });
  }
}

/** A Responses function tool as the response echoes it (the spec's `FunctionTool`). */
export function echoedTools(body: Body): unknown[] {
  if (!Array.isArray(body.tools)) return [];
  return body.tools.map((t) => {
    const tool = t as Body;
    return {
      type: "function",
      name: tool.name,
      description: tool.description ?? null,
      parameters: tool.parameters ?? null,
      strict: tool.strict ?? null,
    };
  });
}

const TOOL_FIELDS = ["type", "name", "description", "parameters", "strict"];

function chatTool(value: unknown, param: string): unknown {
  const tool = asObject(value, param);
  if (tool.type !== "function") {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `'${param}.type' ${JSON.stringify(tool.type)} is not served; declare functions ({"type":"function","name":…,"parameters":…})`,
      { param: `${param}.type` },
    );
  }
  refuseExtraFields(tool, TOOL_FIELDS, param);
  return {
    type: "function",
    function: { name: tool.name, description: tool.description, parameters: tool.parameters, strict: tool.strict },
  };
}

function chatToolChoice(value: unknown): unknown {
  if (absent(value) || typeof value === "string") return value;
  const choice = asObject(value, "tool_choice");
  if (choice.type !== "function") {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `'tool_choice.type' ${JSON.stringify(choice.type)} is not served; send "none", "auto", "required" or {"type":"function","name":…}`,
      { param: "tool_choice" },
    );
  }
  refuseExtraFields(choice, ["type", "name"], "tool_choice");
  return { type: "function", function: { name: choice.name } };
}

/** A `function_call` input item (an earlier answer's call) as an assistant's tool call. */
export function functionCallItem(item: Body, param: string): ChatMessage {
  refuseExtraFields(item, ["type", "id", "call_id", "name", "arguments", "status"], param);
  for (const key of ["call_id", "name", "arguments"] as const) {
    if (typeof item[key] !== "string" || (key !== "arguments" && item[key] === "")) {
      throw invalid(`${param}.${key}`, `'${param}.${key}' must be a${key === "arguments" ? " JSON" : " non-empty"} string`);
    }
  }
  const call = {
    id: item.call_id as string,
    type: "function" as const,
    function: { name: item.name as string, arguments: item.arguments as string },
  };
  return { role: "assistant", content: "", toolCalls: [call] };
}

/** A `function_call_output` input item (a call's result) as a tool message. */
export function functionCallOutputItem(item: Body, param: string): ChatMessage {
  refuseExtraFields(item, ["type", "id", "call_id", "output", "status"], param);
  if (typeof item.call_id !== "string" || item.call_id === "") {
    throw invalid(`${param}.call_id`, `'${param}.call_id' must be the call_id of the function_call it answers`);
  }
  const output = item.output;
  let content: string;
  if (typeof output === "string") content = output;
  else if (Array.isArray(output)) {
    content = output
      .map((part, i) => {
        const p = asObject(part, `${param}.output[${i}]`);
        if (p.type !== "input_text" || typeof p.text !== "string") {
          throw new ArmatureError("NOT_SUPPORTED", `'${param}.output[${i}]': only input_text parts are served`, {
            param: `${param}.output[${i}].type`,
          });
        }
        return p.text;
      })
      .join("");
  } else throw invalid(`${param}.output`, `'${param}.output' must be a string or input_text parts`);
  return { role: "tool", content, toolCallId: item.call_id };
}

/** Adds an assistant's call to the assistant message just before it, as one turn with its calls. */
export function appendCall(messages: ChatMessage[], call: ChatMessage): void {
  const last = messages.at(-1);
  if (last?.role === "assistant") {
    messages[messages.length - 1] = { ...last, toolCalls: [...(last.toolCalls ?? []), ...(call.toolCalls ?? [])] };
  } else messages.push(call);
}

function refuseExtraFields(object: Body, known: readonly string[], param: string): void {
  for (const [key, value] of Object.entries(object)) {
    if (known.includes(key) || absent(value)) continue;
    throw new ArmatureError("NOT_SUPPORTED", `'${param}.${key}' is not supported by this server yet; leave it out`, {
      param: `${param}.${key}`,
    });
  }
}
