import assert from "node:assert/strict";
import { test } from "node:test";
import { toGrammarSchema } from "./grammar-schema.js";

// Shapes node-llama-cpp 3.21's GbnfJsonSchema does not take (dist/utils/gbnfJson/types.d.ts), as
// clients send them: zod-to-json-schema's anyOf and definitions, Pydantic's type lists.

test("anyOf becomes oneOf, in nested properties too", () => {
  assert.deepEqual(
    toGrammarSchema({ type: "object", properties: { v: { anyOf: [{ type: "string" }, { type: "integer" }] } }, required: ["v"] }),
    { type: "object", properties: { v: { oneOf: [{ type: "string" }, { type: "integer" }] } }, required: ["v"] },
  );
});

test("definitions become $defs and their refs follow", () => {
  assert.deepEqual(
    toGrammarSchema({ type: "object", properties: { p: { $ref: "#/definitions/P" } }, definitions: { P: { type: "string" } } }),
    { type: "object", properties: { p: { $ref: "#/$defs/P" } }, $defs: { P: { type: "string" } } },
  );
});

test("a type list with object or array becomes a oneOf; one of plain types stays", () => {
  assert.deepEqual(toGrammarSchema({ type: ["array", "null"], items: { type: "integer" } }), {
    oneOf: [
      { type: "array", items: { type: "integer" } },
      { type: "null", items: { type: "integer" } },
    ],
  });
  assert.deepEqual(toGrammarSchema({ type: ["string", "null"] }), { type: ["string", "null"] });
});

test("a one-part allOf is merged, properties without a type are an object, unknown string formats dropped", () => {
  assert.deepEqual(toGrammarSchema({ allOf: [{ properties: { a: { type: "string", format: "email" } } }] }), {
    properties: { a: { type: "string" } },
    type: "object",
  });
  assert.deepEqual(toGrammarSchema({ type: "string", format: "date" }), { type: "string", format: "date" });
});
