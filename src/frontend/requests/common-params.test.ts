import assert from "node:assert/strict";
import { test } from "node:test";
import { isArmatureError } from "../../protocol/index.js";
import { parseCommonParams } from "./common-params.js";

const withSchema = (schema: unknown): Record<string, unknown> => ({
  model: "m",
  response_format: { type: "json_schema", json_schema: { name: "s", schema } },
});

const nestedArrays = (depth: number): unknown => JSON.parse(`${"[".repeat(depth)}${"]".repeat(depth)}`);

// Regression: a 10,000-deep schema passed the frontend and overflowed the stack while it was
// encoded for the bus, a 500 instead of a 400.
test("a JSON schema nested deeper than a worker takes is refused with a 400 naming it", () => {
  assert.throws(
    () => parseCommonParams(withSchema({ type: "object", properties: nestedArrays(10_000) }), ["max_tokens"]),
    (error: unknown) =>
      isArmatureError(error) && error.code === "REQUEST_INVALID" && error.param === "response_format.json_schema.schema",
  );
});

test("a JSON schema 64 levels deep is accepted", () => {
  // `default` is an annotation: any value there is a schema the grammar takes, 64 levels in all.
  const schema = { default: nestedArrays(63) };
  assert.deepEqual(parseCommonParams(withSchema(schema), ["max_tokens"]).constraint, { type: "json_schema", schema });
  assert.throws(() => parseCommonParams(withSchema({ default: [nestedArrays(64)] }), ["max_tokens"]));
});
