import { ArmatureError } from "../../protocol/index.js";
import { asObject, type Body, invalid, optionalBoolean } from "../requests/field-checks.js";
import type { FunctionTool, ToolChoice, ToolRequest } from "./types.js";

/** OpenAI's rule for function names. */
const FUNCTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;
/** As deep as a `response_format` schema may be (the worker's message schema allows 64 levels). */
const MAX_SCHEMA_DEPTH = 48;

/**
 * Validates `tools`, `tool_choice` and `parallel_tool_calls` of a chat request; undefined when
 * the request declares no tools. Every problem is a 400 naming the field (`tools[1].function.name`).
 */
export function parseToolRequest(body: Body): ToolRequest | undefined {
  const tools = parseTools(body.tools);
  const parallel = optionalBoolean(body, "parallel_tool_calls") ?? true;
  const choice = parseToolChoice(body.tool_choice, tools);
  if (tools.length === 0) return undefined;
  return { tools, choice, parallel };
}

function parseTools(value: unknown): FunctionTool[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw invalid("tools", "'tools' must be an array of {type: \"function\", function: {...}}");
  const names = new Set<string>();
  return value.map((item, i) => {
    const param = `tools[${i}]`;
    const tool = asObject(item, param);
    if (tool.type !== "function") {
      throw new ArmatureError("NOT_SUPPORTED", `'${param}.type' must be "function"; other tool types are not served`, {
        param: `${param}.type`,
      });
    }
    const fn = asObject(tool.function, `${param}.function`);
    const name = fn.name;
    if (typeof name !== "string" || !FUNCTION_NAME.test(name)) {
      throw invalid(`${param}.function.name`, `'${param}.function.name' must be 1 to 64 letters, digits, '_' or '-'`);
    }
    if (names.has(name)) throw invalid(`${param}.function.name`, `'${param}.function.name': '${name}' is declared twice`);
    names.add(name);
    if (fn.description !== undefined && fn.description !== null && typeof fn.description !== "string") {
      throw invalid(`${param}.function.description`, `'${param}.function.description' must be a string`);
    }
    if (fn.strict !== undefined && fn.strict !== null && typeof fn.strict !== "boolean") {
      throw invalid(`${param}.function.strict`, `'${param}.function.strict' must be a boolean`);
    }
    return {
      name,
      ...(typeof fn.description === "string" ? { description: fn.description } : {}),
      parameters: parseParameters(fn.parameters, `${param}.function.parameters`),
    };
  });
}

function parseParameters(value: unknown, param: string): Record<string, unknown> {
  if (value === undefined || value === null) return { type: "object", properties: {} };
  const schema = asObject(value, param);
  if (schema.type !== undefined && schema.type !== "object") {
    throw invalid(
      param,
      `'${param}' must be a JSON schema of an object ("type": "object"), got type ${JSON.stringify(schema.type)}`,
    );
  }
  if (deeperThan(schema, MAX_SCHEMA_DEPTH)) {
    throw invalid(param, `'${param}' is nested deeper than ${MAX_SCHEMA_DEPTH} levels; flatten it or use $defs`);
  }
  for (const key of ["properties", "$defs", "definitions"] as const) {
    if (schema[key] !== undefined) asObject(schema[key], `${param}.${key}`);
  }
  if (schema.required !== undefined && !(Array.isArray(schema.required) && schema.required.every((r) => typeof r === "string"))) {
    throw invalid(`${param}.required`, `'${param}.required' must be an array of property names`);
  }
  return schema;
}

function parseToolChoice(value: unknown, tools: readonly FunctionTool[]): ToolChoice {
  if (value === undefined || value === null) return { type: tools.length > 0 ? "auto" : "none" };
  if (value === "none" || value === "auto") return { type: value };
  if (value === "required") {
    if (tools.length === 0) throw invalid("tool_choice", "'tool_choice' \"required\" needs 'tools' to choose from");
    return { type: "required" };
  }
  if (typeof value === "string")
    throw invalid("tool_choice", '\'tool_choice\' must be "none", "auto", "required" or a named function');
  const choice = asObject(value, "tool_choice");
  if (choice.type !== "function") {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `'tool_choice.type' ${JSON.stringify(choice.type)} is not served; name a function with {"type":"function","function":{"name":…}}`,
      {
        param: "tool_choice",
      },
    );
  }
  const name = asObject(choice.function, "tool_choice.function").name;
  if (typeof name !== "string" || !tools.some((t) => t.name === name)) {
    throw invalid(
      "tool_choice",
      `'tool_choice.function.name' must name one of 'tools' (${tools.map((t) => t.name).join(", ") || "none declared"})`,
    );
  }
  return { type: "function", name };
}

function deeperThan(value: unknown, levels: number): boolean {
  if (value === null || typeof value !== "object") return false;
  const children = Object.values(value);
  return levels === 0 ? children.length > 0 : children.some((child) => deeperThan(child, levels - 1));
}
