import assert from "node:assert/strict";
import { test } from "node:test";
import { faultAt } from "../../test/helpers/schema-fault.js";
import {
  decodeEmbedding,
  embedRequestSchema,
  embedResponseSchema,
  encodeEmbedding,
  MAX_EMBED_INPUTS,
  MAX_EMBED_TOKENS,
} from "./embed.js";

const request = { type: "embed-request", requestId: "r1", model: "m", inputs: [[1, 2], [3]] };
const response = { type: "embed-response", index: 0, embedding: "AACAPwAAAMAAAAA/", promptTokens: 2 };

test("an embed-request parses whole, and fields it does not list are left out", () => {
  const full = { ...request, dimensions: 64, timeoutMs: 1500 };
  assert.deepEqual(embedRequestSchema.parse(full), full);
  assert.deepEqual(embedRequestSchema.parse({ ...request, extra: "x" }), request);
});

test("an embed-request is refused at the field at fault", () => {
  assert.equal(
    faultAt(() => embedRequestSchema.parse({ ...request, type: "generate-request" })),
    "type",
  );
  assert.equal(
    faultAt(() => embedRequestSchema.parse({ ...request, inputs: [] })),
    "inputs",
  );
  assert.equal(
    faultAt(() => embedRequestSchema.parse({ ...request, inputs: [[1], []] })),
    "inputs[1]",
  );
  assert.equal(
    faultAt(() => embedRequestSchema.parse({ ...request, inputs: [[1, 2, -3]] })),
    "inputs[0][2]",
  );
  assert.equal(
    faultAt(() => embedRequestSchema.parse({ ...request, inputs: [[1.5]] })),
    "inputs[0][0]",
  );
  assert.equal(
    faultAt(() => embedRequestSchema.parse({ ...request, dimensions: 0 })),
    "dimensions",
  );
  assert.equal(
    faultAt(() => embedRequestSchema.parse({ ...request, inputs: Array.from({ length: MAX_EMBED_INPUTS + 1 }, () => [1]) })),
    "inputs",
  );
});

test("an embed-request over the token bound is refused before its ids are walked", () => {
  const half = new Array(MAX_EMBED_TOKENS / 2 + 1).fill(1);
  assert.equal(
    faultAt(() => embedRequestSchema.parse({ ...request, inputs: [half, half] })),
    "inputs",
  );
});

test("an embed-response holds whole float32s in base64", () => {
  assert.deepEqual(embedResponseSchema.parse(response), response);
  for (const embedding of ["", "AACA", "AACAPwAAAA==", "AACAPwA", "AACAPw!!AMAAAAA/"]) {
    assert.equal(
      faultAt(() => embedResponseSchema.parse({ ...response, embedding })),
      "embedding",
      embedding,
    );
  }
  assert.equal(
    faultAt(() => embedResponseSchema.parse({ ...response, index: MAX_EMBED_INPUTS })),
    "index",
  );
  assert.equal(
    faultAt(() => embedResponseSchema.parse({ ...response, promptTokens: 0 })),
    "promptTokens",
  );
});

test("embeddings travel as little-endian float32 bytes, as OpenAI's base64 encoding_format", () => {
  // 1.0f = 0x3f800000, -2.0f = 0xc0000000, 0.5f = 0x3f000000, each written low byte first.
  assert.equal(encodeEmbedding([1, -2, 0.5]), "AACAPwAAAMAAAAA/");
  assert.deepEqual(decodeEmbedding("AACAPwAAAMAAAAA/"), [1, -2, 0.5]);
  // A float32 keeps 24 bits: 0.1 comes back as the float32 nearest to it.
  assert.equal(encodeEmbedding([0.1]), "zczMPQ==");
  assert.deepEqual(decodeEmbedding("zczMPQ=="), [0.10000000149011612]);
});
