import assert from "node:assert/strict";
import { test } from "node:test";
import { checkFieldTable } from "../../../test/helpers/field-table.js";
import { isArmatureError } from "../../protocol/index.js";
import { parseRerankRequest, parseScoreRequest } from "./ranking-request.js";
import { rerankFields, scoreFields } from "./request-fields.js";

// The body fields of vLLM's RerankRequest and ScoreRequest (vllm/entrypoints/openai's pooling
// protocol: the pooling request fields, `query`/`documents`/`top_n`, `text_1`/`text_2`), with
// Cohere's and Jina's `return_documents` on rerank.
const POOLING_FIELDS = ["model", "user", "truncate_prompt_tokens", "priority", "use_activation", "mm_processor_kwargs"];

checkFieldTable({
  name: "rerank",
  fields: rerankFields,
  schema: "vLLM's RerankRequest",
  reference: [...POOLING_FIELDS, "query", "documents", "top_n", "instruction", "return_documents"],
  heading: "## `POST /v1/rerank`",
  base: { model: "m", query: "q", documents: ["d"] },
  parse: parseRerankRequest,
});

checkFieldTable({
  name: "score",
  fields: scoreFields,
  schema: "vLLM's ScoreRequest",
  reference: [...POOLING_FIELDS, "text_1", "text_2"],
  heading: "## `POST /v1/score`",
  base: { model: "m", text_1: "q", text_2: "d" },
  parse: parseScoreRequest,
});

const refusedNaming = (param: string) => (e: unknown) => isArmatureError(e) && e.code === "REQUEST_INVALID" && e.param === param;

test("rerank: documents as strings or {text} objects, top_n 0 (all) by default, documents returned by default", () => {
  assert.deepEqual(parseRerankRequest({ model: "m", query: "q", documents: ["a", { text: "b" }] }), {
    model: "m",
    query: "q",
    documents: ["a", "b"],
    topN: 0,
    returnDocuments: true,
  });
  const asked = parseRerankRequest({ model: "m", query: "q", documents: ["a"], top_n: 3, return_documents: false });
  assert.equal(asked.topN, 3);
  assert.equal(asked.returnDocuments, false);
});

test("rerank: a missing or empty query, no documents, an empty document and a bad top_n are refused by name", () => {
  const base = { model: "m", query: "q", documents: ["a"] };
  assert.throws(() => parseRerankRequest({ ...base, query: undefined }), refusedNaming("query"));
  assert.throws(() => parseRerankRequest({ ...base, query: "" }), refusedNaming("query"));
  assert.throws(() => parseRerankRequest({ ...base, documents: undefined }), refusedNaming("documents"));
  assert.throws(() => parseRerankRequest({ ...base, documents: [] }), refusedNaming("documents"));
  assert.throws(() => parseRerankRequest({ ...base, documents: ["a", ""] }), /'documents\[1\]'/);
  assert.throws(() => parseRerankRequest({ ...base, documents: [{ title: "a" }] }), refusedNaming("documents"));
  assert.throws(() => parseRerankRequest({ ...base, documents: Array.from({ length: 2049 }, () => "a") }), /at most 2048/);
  assert.throws(() => parseRerankRequest({ ...base, top_n: -1 }), refusedNaming("top_n"));
  assert.throws(() => parseRerankRequest({ ...base, top_n: 1.5 }), refusedNaming("top_n"));
  assert.throws(() => parseRerankRequest({ ...base, return_documents: "yes" }), refusedNaming("return_documents"));
});

test("score: one text_1 against every text_2, or pair by pair; lists that do not pair up are refused naming text_2", () => {
  assert.deepEqual(parseScoreRequest({ model: "m", text_1: "q", text_2: ["a", "b"] }), {
    model: "m",
    queries: ["q"],
    documents: ["a", "b"],
  });
  assert.deepEqual(parseScoreRequest({ model: "m", text_1: ["q", "r"], text_2: ["a", "b"] }).queries, ["q", "r"]);
  assert.deepEqual(parseScoreRequest({ model: "m", text_1: ["q"], text_2: "a" }).documents, ["a"]);
  assert.throws(() => parseScoreRequest({ model: "m", text_1: ["q", "r"], text_2: ["a", "b", "c"] }), refusedNaming("text_2"));
  assert.throws(() => parseScoreRequest({ model: "m", text_1: ["q", "r"], text_2: "a" }), refusedNaming("text_2"));
  assert.throws(() => parseScoreRequest({ model: "m", text_1: "", text_2: "a" }), refusedNaming("text_1"));
  assert.throws(() => parseScoreRequest({ model: "m", text_1: "q" }), refusedNaming("text_2"));
  assert.throws(() => parseScoreRequest({ model: "m", text_1: 5, text_2: "a" }), refusedNaming("text_1"));
});
