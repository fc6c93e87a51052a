import assert from "node:assert/strict";
import { test } from "node:test";
import { isArmatureError } from "../../protocol/index.js";
import { parseEmbeddingsRequest } from "./embeddings-request.js";

// The four shapes of `input` in OpenAI's CreateEmbeddingRequest (string, array of strings, array
// of integers, array of integer arrays), and what its schema rules out (empty strings, empty arrays).

test("each shape of input OpenAI's schema allows becomes texts or token-id inputs, in order", () => {
  const parse = (input: unknown) => parseEmbeddingsRequest({ model: "m", input }).input;
  assert.deepEqual(parse("hello"), { kind: "texts", texts: ["hello"] });
  assert.deepEqual(parse(["a", "b"]), { kind: "texts", texts: ["a", "b"] });
  assert.deepEqual(parse([5, 0, 7]), { kind: "tokens", tokens: [[5, 0, 7]] });
  assert.deepEqual(parse([[1, 2], [3]]), { kind: "tokens", tokens: [[1, 2], [3]] });
});

test("encoding_format defaults to float; dimensions and user pass through", () => {
  assert.deepEqual(parseEmbeddingsRequest({ model: "m", input: "x" }), {
    model: "m",
    input: { kind: "texts", texts: ["x"] },
    encodingFormat: "float",
    dimensions: undefined,
  });
  const full = parseEmbeddingsRequest({ model: "m", input: "x", encoding_format: "base64", dimensions: 64, user: "u" });
  assert.equal(full.encodingFormat, "base64");
  assert.equal(full.dimensions, 64);
});

test("what the schema rules out is a 400 naming the field", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ model: "m" }, "input"],
    [{ model: "m", input: "" }, "input"],
    [{ model: "m", input: [] }, "input"],
    [{ model: "m", input: ["a", ""] }, "input"],
    [{ model: "m", input: [[1], []] }, "input"],
    [{ model: "m", input: [1, 2.5] }, "input"],
    [{ model: "m", input: [1, -1] }, "input"],
    [{ model: "m", input: ["a", 1] }, "input"],
    [{ model: "m", input: { text: "a" } }, "input"],
    [{ model: "m", input: Array.from({ length: 2049 }, () => "a") }, "input"],
    [{ input: "x" }, "model"],
    [{ model: "m", input: "x", encoding_format: "int8" }, "encoding_format"],
    [{ model: "m", input: "x", dimensions: 0 }, "dimensions"],
    [{ model: "m", input: "x", dimensions: 1.5 }, "dimensions"],
    [{ model: "m", input: "x", user: 7 }, "user"],
    [{ model: "m", input: "x", truncate: "END" }, "truncate"],
  ];
  for (const [body, param] of cases) {
    assert.throws(
      () => parseEmbeddingsRequest(body),
      (e: unknown) => isArmatureError(e) && e.code === "REQUEST_INVALID" && e.param === param,
      JSON.stringify(body).slice(0, 80),
    );
  }
  assert.doesNotThrow(() => parseEmbeddingsRequest({ model: "m", input: Array.from({ length: 2048 }, () => "a") }));
});
