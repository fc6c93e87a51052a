import assert from "node:assert/strict";
import { test } from "node:test";
import { isArmatureError } from "../../protocol/index.js";
import { parseDetokenizeRequest, parseTokenizeRequest } from "./tokenize-request.js";

const namesParam = (param: string) => (e: unknown) => isArmatureError(e) && e.code === "REQUEST_INVALID" && e.param === param;

test("tokenize takes a prompt, or messages with a generation prompt by default", () => {
  assert.deepEqual(parseTokenizeRequest({ model: "m", prompt: "hi" }), { kind: "text", model: "m", prompt: "hi" });
  assert.deepEqual(parseTokenizeRequest({ model: "m", messages: [{ role: "user", content: "hi" }] }), {
    kind: "chat",
    model: "m",
    messages: [{ role: "user", content: "hi" }],
    addGenerationPrompt: true,
    tools: [],
  });
  const without = parseTokenizeRequest({ model: "m", messages: [{ role: "user", content: "hi" }], add_generation_prompt: false });
  assert.equal(without.kind === "chat" && without.addGenerationPrompt, false);
});

test("tokenize refuses, by name, a body that is not one of its two shapes", () => {
  const messages = [{ role: "user", content: "hi" }];
  assert.throws(() => parseTokenizeRequest({ model: "m", prompt: "hi", messages }), namesParam("messages"));
  assert.throws(() => parseTokenizeRequest({ model: "m" }), namesParam("prompt"));
  assert.throws(() => parseTokenizeRequest({ model: "m", prompt: [1, 2] }), namesParam("prompt"));
  assert.throws(() => parseTokenizeRequest({ prompt: "hi" }), namesParam("model"));
  assert.throws(
    () => parseTokenizeRequest({ model: "m", prompt: "hi", add_generation_prompt: true }),
    namesParam("add_generation_prompt"),
  );
  assert.throws(
    () => parseTokenizeRequest({ model: "m", messages: [{ role: "robot", content: "x" }] }),
    namesParam("messages[0].role"),
  );
  assert.throws(() => parseTokenizeRequest([]), namesParam("body"));
});

test("detokenize takes non-negative integer token ids and refuses anything else by name", () => {
  assert.deepEqual(parseDetokenizeRequest({ model: "m", tokens: [0, 5] }), { model: "m", tokens: [0, 5] });
  for (const tokens of [undefined, "12", [1, -1], [1.5], [1, "2"]]) {
    assert.throws(() => parseDetokenizeRequest({ model: "m", tokens }), namesParam("tokens"), JSON.stringify(tokens));
  }
});
