import type { ResponseConstraint } from "../../protocol/index.js";
import { toGrammarSchema } from "./grammar-schema.js";
import { callFromObject, tryParseJson } from "./json-scan.js";
import type { FunctionTool, ParsedToolCall, ToolRequest } from "./types.js";

/**
 * The JSON schema that makes the model's whole answer a call, as vLLM does for `tool_choice`
 * `required` and a named function: `{"name": <const>, "arguments": <the function's parameters>}`;
 * for `required`, one of the tools' shapes, and with `parallel_tool_calls` (the default) an array
 * of at least one of them. Undefined for `none` and `auto`, which are not constrained.
 */
export function toolCallConstraint(request: ToolRequest): ResponseConstraint | undefined {
  const { choice, tools } = request;
  if (choice.type === "function") {
    const tool = tools.find((t) => t.name === choice.name) as FunctionTool;
    return { type: "json_schema", schema: callSchema(tool) };
  }
  if (choice.type !== "required") return undefined;
  const one = tools.length === 1 ? callSchema(tools[0] as FunctionTool) : { oneOf: tools.map(callSchema) };
  return { type: "json_schema", schema: request.parallel ? { type: "array", items: one, minItems: 1 } : one };
}

function callSchema(tool: FunctionTool): Record<string, unknown> {
  return {
    type: "object",
    properties: { name: { const: tool.name }, arguments: toGrammarSchema(tool.parameters) },
    required: ["name", "arguments"],
  };
}

/** The calls in an answer generated under `toolCallConstraint`; undefined when it is not whole (cut by `max_tokens`). */
export function readConstrainedCalls(text: string): ParsedToolCall[] | undefined {
  const value = tryParseJson(text);
  const items = Array.isArray(value) ? value : [value];
  const calls = items.map(callFromObject);
  return calls.length > 0 && calls.every((c) => c !== undefined) ? (calls as ParsedToolCall[]) : undefined;
}
