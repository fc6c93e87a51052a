import assert from "node:assert/strict";
import { test } from "node:test";
import { isArmatureError } from "../../protocol/index.js";
import { parseCompletionRequest } from "./completion-request.js";

const body = (prompt: unknown): unknown => ({ model: "m", prompt });

test("a prompt is a string, token ids, or a batch of one of either", () => {
  assert.deepEqual(parseCompletionRequest(body("hi")).prompt, { text: "hi" });
  assert.deepEqual(parseCompletionRequest(body([1, 2])).prompt, { tokenIds: [1, 2] });
  assert.deepEqual(parseCompletionRequest(body(["hi"])).prompt, { text: "hi" });
  assert.deepEqual(parseCompletionRequest(body([[1, 2]])).prompt, { tokenIds: [1, 2] });
});

// Regression: a prompt of 100,000 nested one-element arrays overflowed the stack (HTTP 500).
test("a deeply nested prompt is refused as invalid, not a stack overflow", () => {
  const nested = JSON.parse(`${"[".repeat(100_000)}"hi"${"]".repeat(100_000)}`) as unknown;
  assert.throws(
    () => parseCompletionRequest(body(nested)),
    (error: unknown) => isArmatureError(error) && error.code === "REQUEST_INVALID" && error.param === "prompt",
  );
  assert.throws(
    () => parseCompletionRequest(body([["hi"]])),
    (error: unknown) => isArmatureError(error) && error.param === "prompt",
  );
});
