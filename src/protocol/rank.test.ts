import assert from "node:assert/strict";
import { test } from "node:test";
import { faultAt } from "../../test/helpers/schema-fault.js";
import { MAX_RANK_TOKENS, queryOf, rankRequestSchema, rankResponseSchema } from "./rank.js";

const request = { type: "rank-request" as const, requestId: "r1", model: "m", queries: [[1, 2]], documents: [[3], [4, 5]] };
const response = { type: "rank-response", index: 1, score: 0.25, promptTokens: 7 };

test("a rank-request parses whole; one query serves every document, or one per document pairs up", () => {
  const full = { ...request, timeoutMs: 1500 };
  assert.deepEqual(rankRequestSchema.parse(full), full);
  assert.deepEqual(queryOf(request, 1), [1, 2]);
  const paired = { ...request, queries: [[1], [2]] };
  assert.deepEqual(rankRequestSchema.parse(paired), paired);
  assert.deepEqual(queryOf(paired, 1), [2]);
});

test("a rank-request is refused at the field at fault", () => {
  assert.equal(
    faultAt(() => rankRequestSchema.parse({ ...request, documents: [] })),
    "documents",
  );
  assert.equal(
    faultAt(() => rankRequestSchema.parse({ ...request, queries: [[1], [2], [3]] })),
    "queries",
  );
  assert.equal(
    faultAt(() => rankRequestSchema.parse({ ...request, queries: [] })),
    "queries",
  );
  assert.equal(
    faultAt(() => rankRequestSchema.parse({ ...request, documents: [[3], []] })),
    "documents[1]",
  );
  assert.equal(
    faultAt(() => rankRequestSchema.parse({ ...request, queries: [[]] })),
    "queries[0]",
  );
  assert.equal(
    faultAt(() => rankRequestSchema.parse({ ...request, documents: [[-1]] })),
    "documents[0][0]",
  );
  const huge = new Array(MAX_RANK_TOKENS).fill(1);
  assert.equal(
    faultAt(() => rankRequestSchema.parse({ ...request, documents: [huge, [1]] })),
    "documents",
  );
});

test("a rank-response carries a probability and the pair's tokens", () => {
  assert.deepEqual(rankResponseSchema.parse(response), response);
  assert.equal(
    faultAt(() => rankResponseSchema.parse({ ...response, score: 1.5 })),
    "score",
  );
  assert.equal(
    faultAt(() => rankResponseSchema.parse({ ...response, score: Number.NaN })),
    "score",
  );
  assert.equal(
    faultAt(() => rankResponseSchema.parse({ ...response, promptTokens: 0 })),
    "promptTokens",
  );
});
