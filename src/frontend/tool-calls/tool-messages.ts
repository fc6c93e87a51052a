import { asObject, invalid } from "../requests/field-checks.js";
import type { ChatToolCall } from "./types.js";

/**
 * Validates an assistant message's `tool_calls` (the calls it made earlier in the conversation):
 * each `{id, type: "function", function: {name, arguments}}`, arguments a string as OpenAI sends it.
 */
export function parseMessageToolCalls(value: unknown, param: string): ChatToolCall[] {
  if (!Array.isArray(value)) throw invalid(param, `'${param}' must be an array of tool calls`);
  return value.map((item, i) => {
    const at = `${param}[${i}]`;
    const call = asObject(item, at);
    if (typeof call.id !== "string" || call.id === "") throw invalid(`${at}.id`, `'${at}.id' must be a non-empty string`);
    if (call.type !== "function") throw invalid(`${at}.type`, `'${at}.type' must be "function"`);
    const fn = asObject(call.function, `${at}.function`);
    if (typeof fn.name !== "string" || fn.name === "")
      throw invalid(`${at}.function.name`, `'${at}.function.name' must be a non-empty string`);
    if (typeof fn.arguments !== "string")
      throw invalid(`${at}.function.arguments`, `'${at}.function.arguments' must be a JSON string`);
    return { id: call.id, type: "function", function: { name: fn.name, arguments: fn.arguments } };
  });
}

/** Validates a tool message's `tool_call_id`: which call its content answers. */
export function parseToolCallId(value: unknown, param: string): string {
  if (typeof value !== "string" || value === "")
    throw invalid(param, `'${param}' must be the id of the tool call this message answers`);
  return value;
}

/**
 * A message's calls as chat templates take them (Hugging Face's convention, as vLLM passes them):
 * `arguments` parsed into an object when it is JSON, so a template's `tojson` writes it once.
 */
export function templateToolCalls(calls: readonly ChatToolCall[]): unknown[] {
  return calls.map((call) => {
    let args: unknown = call.function.arguments;
    try {
      args = JSON.parse(call.function.arguments);
    } catch {
      // Not JSON: the template gets the string as sent.
    }
    return { id: call.id, type: "function", function: { name: call.function.name, arguments: args } };
  });
}

/** Tools as chat templates take them (Hugging Face's convention): `{type: "function", function: {name, description, parameters}}`. */
export function templateTools(
  tools: readonly { name: string; description?: string | undefined; parameters: unknown }[],
): unknown[] {
  return tools.map((t) => ({
    type: "function",
    function: { name: t.name, ...(t.description === undefined ? {} : { description: t.description }), parameters: t.parameters },
  }));
}
