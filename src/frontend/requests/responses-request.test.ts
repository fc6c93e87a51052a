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
