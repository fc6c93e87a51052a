import type { ResponseConstraint } from "../../protocol/index.js";
import { callFromObject, tryParseJson } from "./json-scan.js";
import type { FunctionTool, ParsedToolCall, ToolRequest } from "./types.js";

/**
 * The JSON schema that makes the model's whole answer a call, as vLLM does for `tool_choice`
 * `required` and a named function: `{"name": <const>, "arguments": <the function's parameters>}`;
 * for `required`, one of the tools' shapes (`anyOf`: their names keep them apart), and with
 * `parallel_tool_calls` (the default) an array of at least one of them. The parameters are taken
 * as they are, every keyword enforced or refused (src/grammar); their local `$ref`s are rebased to
 * where the parameters sit in the call schema. Undefined for `none` and `auto`, not constrained.
 */
export function toolCallConstraint(request: ToolRequest): ResponseConstraint | undefined {
  const { choice, tools } = request;
  if (choice.type === "function") {
    const tool = tools.find((t) => t.name === choice.name) as FunctionTool;
    return { type: "json_schema", schema: callSchema(tool, "") };
  }
  if (choice.type !== "required") return undefined;
  const base = request.parallel ? "/items" : "";
  const one =
    tools.length === 1
      ? callSchema(tools[0] as FunctionTool, base)
      : { anyOf: tools.map((tool, i) => callSchema(tool, `${base}/anyOf/${i}`)) };
  return { type: "json_schema", schema: request.parallel ? { type: "array", items: one, minItems: 1 } : one };
}

/** Where a tool's parameters sit in the call schema whose pointer is `at`. */
export function argumentsPointer(at: string): string {
  return `${at}/properties/arguments`;
}

function callSchema(tool: FunctionTool, at: string): Record<string, unknown> {
  return {
    type: "object",
    properties: { name: { const: tool.name }, arguments: rebaseRefs(tool.parameters, argumentsPointer(at)) },
    required: ["name", "arguments"],
  };
}

/** The schema with every local `$ref` (`#…`) pointing into it from `base` in the enclosing schema. */
function rebaseRefs(schema: unknown, base: string): unknown {
  if (Array.isArray(schema)) return schema.map((item) => rebaseRefs(item, base));
  if (schema === null || typeof schema !== "object") return schema;
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) =>
      key === "$ref" && typeof value === "string" && value.startsWith("#")
        ? [key, `#${base}${value.slice(1)}`]
        : [key, rebaseRefs(value, base)],
    ),
  );
}

/** The calls in an answer generated under `toolCallConstraint`; undefined when it is not whole (cut by `max_tokens`). */
export function readConstrainedCalls(text: string): ParsedToolCall[] | undefined {
  const value = tryParseJson(text);
  const items = Array.isArray(value) ? value : [value];
  const calls = items.map(callFromObject);
  return calls.length > 0 && calls.every((c) => c !== undefined) ? (calls as ParsedToolCall[]) : undefined;
}
