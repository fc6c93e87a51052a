import assert from "node:assert/strict";
import { test } from "node:test";
import { checkFieldTable } from "../../../test/helpers/field-table.js";
import { responsesSpec } from "../../../test/helpers/responses-spec.js";
import { isArmatureError } from "../../protocol/index.js";
import { parseResponsesRequest, responsesFields } from "./responses-request.js";

/** Every property a schema of the spec declares, through $ref and allOf/anyOf/oneOf. */
function specFields(name: string): string[] {
  const schemas = responsesSpec.components.schemas;
  const seen = new Set<string>();
  const walk = (schema: Record<string, unknown> | undefined): void => {
    if (!schema) return;
    if (typeof schema.$ref === "string") {
      walk(schemas[schema.$ref.split("/").pop() as string]);
      return;
    }
    for (const key of ["allOf", "anyOf", "oneOf"])
      for (const part of (schema[key] as Record<string, unknown>[]) ?? []) walk(part);
    for (const field of Object.keys((schema.properties as object) ?? {})) seen.add(field);
  };
  walk(schemas[name]);
  return [...seen];
}

checkFieldTable({
  name: "responses",
  fields: responsesFields,
  schema: "OpenAI's CreateResponse",
  reference: specFields("CreateResponse"),
  heading: "## `POST /v1/responses`",
  base: { model: "m", input: "hi" },
  parse: parseResponsesRequest,
});

test("instructions and message items become the chat template's messages", () => {
  const request = parseResponsesRequest({
    model: "m",
    instructions: "Be brief.",
    input: [
      {
        role: "developer",
        content: [
          { type: "input_text", text: "Answer " },
          { type: "input_text", text: "in English." },
        ],
      },
      { role: "user", content: "Hello" },
      {
        id: "msg_1",
        type: "message",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "Hi", annotations: [] }],
      },
      { type: "message", role: "user", content: "Again" },
    ],
    max_output_tokens: 7,
  });
  assert.deepEqual(request.messages, [
    { role: "system", content: "Be brief." },
    { role: "developer", content: "Answer in English." },
    { role: "user", content: "Hello" },
    { role: "assistant", content: "Hi" },
    { role: "user", content: "Again" },
  ]);
  assert.equal(request.params.maxTokens, 7);
  assert.deepEqual(parseResponsesRequest({ model: "m", input: "hi" }).messages, [{ role: "user", content: "hi" }]);
});

test("text.format becomes the engine's constraint, and its errors name the Responses field", () => {
  const schema = { type: "object", properties: { a: { type: "integer" } } };
  const withFormat = (format: unknown) => parseResponsesRequest({ model: "m", input: "hi", text: { format } });
  assert.deepEqual(withFormat({ type: "json_schema", name: "a", schema, strict: true }).params.constraint, {
    type: "json_schema",
    schema,
  });
  assert.deepEqual(withFormat({ type: "json_object" }).params.constraint, { type: "json_object" });
  assert.equal(withFormat({ type: "text" }).params.constraint, undefined);
  let deep: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < 70; i++) deep = { type: "array", items: deep };
  for (const [format, param] of [
    [{ type: "json_schema", name: "a", schema: deep }, "text.format.schema"],
    [{ type: "xml" }, "text.format.type"],
    [{ type: "json_schema", name: "a", schema, extra: 1 }, "text.format.extra"],
  ] as const) {
    assert.throws(
      () => withFormat(format),
      (e: unknown) => isArmatureError(e) && e.param === param && !e.message.includes("response_format"),
      param,
    );
  }
});

test("function tools and calls in the Responses shape become the chat machinery's", () => {
  const request = parseResponsesRequest({
    model: "m",
    tools: [{ type: "function", name: "f", description: "d", parameters: { type: "object", properties: {} }, strict: true }],
    tool_choice: { type: "function", name: "f" },
    parallel_tool_calls: false,
    input: [
      { role: "user", content: "hi" },
      { type: "message", role: "assistant", content: "Calling." },
      { type: "function_call", id: "fc_1", call_id: "call_1", name: "f", arguments: "{}", status: "completed" },
      { type: "function_call", call_id: "call_2", name: "f", arguments: '{"a":1}' },
      { type: "function_call_output", call_id: "call_1", output: "one" },
      { type: "function_call_output", call_id: "call_2", output: [{ type: "input_text", text: "two" }] },
    ],
  });
  assert.deepEqual(request.tools, {
    tools: [{ name: "f", description: "d", parameters: { type: "object", properties: {} } }],
    choice: { type: "function", name: "f" },
    parallel: false,
  });
  assert.deepEqual(request.messages, [
    { role: "user", content: "hi" },
    {
      role: "assistant",
      content: "Calling.",
      toolCalls: [
        { id: "call_1", type: "function", function: { name: "f", arguments: "{}" } },
        { id: "call_2", type: "function", function: { name: "f", arguments: '{"a":1}' } },
      ],
    },
    { role: "tool", content: "one", toolCallId: "call_1" },
    { role: "tool", content: "two", toolCallId: "call_2" },
  ]);
  assert.equal(parseResponsesRequest({ model: "m", input: "hi" }).tools, undefined);
  assert.equal(parseResponsesRequest({ model: "m", input: "hi", tool_choice: "none" }).echo.toolChoice, "none");
});

test("tool errors name the Responses fields, not chat's", () => {
  const refused = (body: Record<string, unknown>, param: string) =>
    assert.throws(
      () => parseResponsesRequest({ model: "m", input: "hi", ...body }),
      (e: unknown) => isArmatureError(e) && e.param === param && !e.message.includes(".function."),
      param,
    );
  refused({ tools: [{ type: "function", name: "x y" }] }, "tools[0].name");
  refused({ tools: [{ type: "function", name: "f", parameters: { type: "string" } }] }, "tools[0].parameters");
  refused({ tools: [{ type: "file_search", vector_store_ids: [] }] }, "tools[0].type");
  refused({ tools: [{ type: "function", name: "f", namespace: "n" }] }, "tools[0].namespace");
  refused({ input: [{ type: "function_call", call_id: "c", name: "f" }] }, "input[0].arguments");
  refused({ input: [{ type: "function_call_output", output: "x" }] }, "input[0].call_id");
});

test("include asks for log-probabilities, top_logprobs for alternatives; anything else is refused by name", () => {
  const parse = (body: Record<string, unknown>) => parseResponsesRequest({ model: "m", input: "hi", ...body });
  assert.deepEqual(parse({ include: ["message.output_text.logprobs"], top_logprobs: 5 }).params.logprobs, { top: 5 });
  assert.deepEqual(parse({ include: ["message.output_text.logprobs"] }).params.logprobs, { top: 0 });
  assert.equal(parse({ include: [] }).params.logprobs, undefined);
  const tools = [{ type: "function", name: "f" }];
  assert.equal(parse({ include: ["message.output_text.logprobs"], tools, tool_choice: "none" }).params.logprobs?.top, 0);
  for (const [body, param] of [
    [{ include: ["web_search_call.results"] }, "include"],
    [{ include: "message.output_text.logprobs" }, "include"],
    [{ top_logprobs: 2 }, "top_logprobs"],
    [{ include: ["message.output_text.logprobs"], top_logprobs: 21 }, "top_logprobs"],
    [{ include: ["message.output_text.logprobs"], tools }, "include"],
  ] as const) {
    assert.throws(
      () => parse(body),
      (e: unknown) => isArmatureError(e) && e.param === param,
      JSON.stringify(body),
    );
  }
});
