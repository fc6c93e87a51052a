import assert from "node:assert/strict";
import { test } from "node:test";
import { isArmatureError } from "../../protocol/index.js";
import { parseCompletionRequest } from "./completion-request.js";

const body = (prompt: unknown): unknown => ({ model: "m", prompt });

test("a prompt is a string, token ids, or a batch of either", () => {
  assert.deepEqual(parseCompletionRequest(body("hi")).prompts, [{ text: "hi" }]);
  assert.deepEqual(parseCompletionRequest(body([1, 2])).prompts, [{ tokenIds: [1, 2] }]);
  assert.deepEqual(parseCompletionRequest(body(["hi"])).prompts, [{ text: "hi" }]);
  assert.deepEqual(parseCompletionRequest(body([[1, 2]])).prompts, [{ tokenIds: [1, 2] }]);
  assert.deepEqual(parseCompletionRequest(body(["hi", [3], "yo"])).prompts, [{ text: "hi" }, { tokenIds: [3] }, { text: "yo" }]);
  assert.deepEqual(parseCompletionRequest(body(["hi", "yo"])).prompt, { text: "hi" });
});

test("best_of is at least n, is not streamed above n, and echo with logprobs is refused by name", () => {
  const refused = (extra: Record<string, unknown>, param: string, code = "REQUEST_INVALID"): void =>
    assert.throws(
      () => parseCompletionRequest({ model: "m", prompt: "hi", ...extra }),
      (e: unknown) => isArmatureError(e) && e.param === param && e.code === code,
      JSON.stringify(extra),
    );
  refused({ n: 3, best_of: 2 }, "best_of");
  refused({ n: 1, best_of: 2, stream: true }, "best_of");
  refused({ echo: true, logprobs: 1 }, "echo", "NOT_SUPPORTED");
  refused({ logprobs: 6 }, "logprobs");
  refused({ n: 65, prompt: ["a", "b"] }, "n");
  assert.equal(parseCompletionRequest({ model: "m", prompt: "hi", n: 2 }).bestOf, 2);
  assert.deepEqual(parseCompletionRequest({ model: "m", prompt: "hi", logprobs: 0 }).logprobs, { top: 0 });
});

// Regression: a prompt of 100,000 nested one-element arrays overflowed the stack (HTTP 500).
test("a deeply nested prompt is refused as invalid, not a stack overflow", () => {
  const nested = JSON.parse(`${"[".repeat(100_000)}"hi"${"]".repeat(100_000)}`) as unknown;
  assert.throws(
    () => parseCompletionRequest(body(nested)),
    (error: unknown) => isArmatureError(error) && error.code === "REQUEST_INVALID" && error.param === "prompt[0]",
  );
  assert.throws(
    () => parseCompletionRequest(body([["hi"]])),
    (error: unknown) => isArmatureError(error) && error.param === "prompt[0]",
  );
});
