import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { getLlama, type LlamaModel, type LlamaRankingContext } from "node-llama-cpp";
import { ensureTinyModel, ensureTinyRanker } from "../../src/engines/index.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { startLlamaServer } from "../helpers/llama-server.js";

// vLLM's rerank and score APIs against `armature serve` on two llama.cpp models at once: the
// generated tiny ranker (a GGUF with a ranking head) and the tiny model (none). The expected scores
// and token counts are node-llama-cpp's own, from a ranking context on the same file in this process.
const RANKER = "tiny-ranker";
const PLAIN = "tiny-chat";
const CONTEXT = 256;
const QUERY = "where is the sea?";
const DOCUMENTS = ["a cat sat on the mat", "the sea is blue and the sea is wide", "hello world", "sea sea sea", "the ship"];

let server: ServeProcess;
let model: LlamaModel;
let reference: LlamaRankingContext;

before(async () => {
  const rankerPath = await ensureTinyRanker();
  server = await startServe([
    "--model",
    `${rankerPath}=${RANKER}`,
    "--model",
    `${await ensureTinyModel()}=${PLAIN}`,
    "--context-size",
    String(CONTEXT),
  ]);
  const llama = await getLlama({ gpu: false });
  model = await llama.loadModel({ modelPath: rankerPath });
  reference = await model.createRankingContext({ contextSize: CONTEXT, threads: 1 });
});
after(async () => {
  await reference?.dispose();
  await model?.dispose();
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

async function post(path: string, body: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

interface RerankBody {
  id: string;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
  results: { index: number; relevance_score: number; document?: { text: string } }[];
}

test("rerank: every document scored as the engine scores it, best first, with its index and text, and usage its tokens", async () => {
  const { status, json } = await post("/v1/rerank", { model: RANKER, query: QUERY, documents: DOCUMENTS });
  assert.equal(status, 200, JSON.stringify(json));
  const body = json as unknown as RerankBody;
  assert.match(body.id, /^rerank-/);
  assert.equal(body.model, RANKER);
  const expected = await reference.rankAll(QUERY, DOCUMENTS);
  assert.equal(body.results.length, DOCUMENTS.length);
  for (const result of body.results) {
    assert.ok(Math.abs(result.relevance_score - (expected[result.index] as number)) < 1e-6, JSON.stringify(result));
    assert.deepEqual(result.document, { text: DOCUMENTS[result.index] });
  }
  const order = expected.map((score, index) => ({ score, index })).sort((a, b) => b.score - a.score);
  assert.deepEqual(
    body.results.map((r) => r.index),
    order.map((o) => o.index),
  );
  // The ranker scores by the share of " sea": the document that is only " sea" first, the one without it last.
  assert.equal(body.results[0]?.index, 3);
  const tokens = DOCUMENTS.reduce((sum, d) => sum + reference.calculateInputLength(QUERY, d), 0);
  assert.deepEqual(body.usage, { prompt_tokens: tokens, total_tokens: tokens });
});

test("rerank: top_n keeps the best, return_documents false leaves the texts out, {text} objects read as strings", async () => {
  const all = (await post("/v1/rerank", { model: RANKER, query: QUERY, documents: DOCUMENTS })).json as unknown as RerankBody;
  const top = (
    await post("/v1/rerank", {
      model: RANKER,
      query: QUERY,
      documents: DOCUMENTS.map((text) => ({ text })),
      top_n: 2,
      return_documents: false,
    })
  ).json as unknown as RerankBody;
  assert.deepEqual(
    top.results,
    all.results.slice(0, 2).map(({ index, relevance_score }) => ({ index, relevance_score })),
  );
  assert.deepEqual(top.usage, all.usage, "usage counts every document scored, not only those returned");
});

test("rerank answers the same at /rerank and /v2/rerank", async () => {
  const body = { model: RANKER, query: QUERY, documents: DOCUMENTS.slice(0, 2) };
  const answers = await Promise.all(["/v1/rerank", "/rerank", "/v2/rerank"].map((path) => post(path, body)));
  for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.json));
  assert.deepEqual(answers[1]?.json.results, answers[0]?.json.results);
  assert.deepEqual(answers[2]?.json.results, answers[0]?.json.results);
});

test("score: one text_1 against every text_2, and pair by pair, in pair order, at /v1/score and /score", async () => {
  const broadcast = await post("/v1/score", { model: RANKER, text_1: QUERY, text_2: DOCUMENTS.slice(0, 3) });
  assert.equal(broadcast.status, 200, JSON.stringify(broadcast.json));
  const body = broadcast.json as {
    object: string;
    model: string;
    created: number;
    data: { index: number; object: string; score: number }[];
  };
  assert.equal(body.object, "list");
  assert.equal(body.model, RANKER);
  assert.ok(Number.isInteger(body.created));
  const expected = await reference.rankAll(QUERY, DOCUMENTS.slice(0, 3));
  assert.deepEqual(
    body.data.map((d) => [d.index, d.object]),
    [
      [0, "score"],
      [1, "score"],
      [2, "score"],
    ],
  );
  for (const d of body.data) assert.ok(Math.abs(d.score - (expected[d.index] as number)) < 1e-6);
  const queries = ["the sea", "a cat"];
  const pairs = ["sea sea sea", "the mat"];
  const paired = (await post("/score", { model: RANKER, text_1: queries, text_2: pairs })).json as typeof body & {
    usage: Record<string, number>;
  };
  for (const [i, d] of paired.data.entries()) {
    assert.ok(Math.abs(d.score - (await reference.rank(queries[i] as string, pairs[i] as string))) < 1e-6);
  }
  const tokens = queries.reduce((sum, q, i) => sum + reference.calculateInputLength(q, pairs[i] as string), 0);
  assert.deepEqual(paired.usage, { prompt_tokens: tokens, total_tokens: tokens, completion_tokens: 0 });
});

test("scores equal llama.cpp's own llama-server --rerank on the same GGUF (another implementation of the ranking)", async () => {
  const llamaServer = await startLlamaServer({ model: await ensureTinyRanker(), slots: 1, extraArgs: ["--rerank"] });
  try {
    const body = { model: RANKER, query: QUERY, documents: DOCUMENTS };
    const theirs = (await (
      await fetch(`${llamaServer.url}/v1/rerank`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      })
    ).json()) as RerankBody;
    const ours = (await post("/v1/rerank", body)).json as unknown as RerankBody;
    assert.deepEqual(
      ours.results.map((r) => r.index),
      theirs.results.map((r) => r.index),
    );
    for (const [i, result] of ours.results.entries()) {
      assert.ok(Math.abs(result.relevance_score - (theirs.results[i]?.relevance_score as number)) < 1e-6, JSON.stringify(result));
    }
    assert.equal(ours.usage.prompt_tokens, theirs.usage.prompt_tokens, "both read the same tokens");
  } finally {
    await llamaServer.stop();
  }
});

test("GET /v1/models lists rerank among the ranker's kinds only", async () => {
  const listed = (await (await fetch(`${server.url}/v1/models`)).json()) as { data: { id: string; kinds: string[] }[] };
  const kinds = new Map(listed.data.map((m) => [m.id, m.kinds]));
  assert.deepEqual(kinds.get(RANKER), ["chat", "embeddings", "rerank"]);
  assert.deepEqual(kinds.get(PLAIN), ["chat", "embeddings"]);
});

test("a model without a ranking head, a pair past the context and bad fields are refused by name", async () => {
  const plain = await post("/v1/rerank", { model: PLAIN, query: QUERY, documents: ["a"] });
  assert.equal(plain.status, 400);
  const error = plain.json.error as { param: string; message: string };
  assert.equal(error.param, "model");
  assert.match(error.message, /cannot rank: its GGUF has no classifier head/);
  assert.equal((await post("/v1/score", { model: PLAIN, text_1: "a", text_2: "b" })).status, 400);

  const long = await post("/v1/rerank", { model: RANKER, query: QUERY, documents: ["a", "the sea ".repeat(200)] });
  assert.equal(long.status, 400, JSON.stringify(long.json));
  assert.equal((long.json.error as { param: string }).param, "documents");
  assert.match((long.json.error as { message: string }).message, /document 1 and its query make \d+ tokens/);

  for (const [body, param] of [
    [{ model: RANKER, query: QUERY, documents: [] }, "documents"],
    [{ model: RANKER, query: QUERY, documents: ["a"], top_n: -1 }, "top_n"],
    [{ model: RANKER, query: QUERY, documents: ["a"], truncate_prompt_tokens: 10 }, "truncate_prompt_tokens"],
    [{ model: RANKER, query: QUERY, documents: ["a"], temperature: 1 }, "temperature"],
    [{ model: RANKER, text_1: ["a", "b"], text_2: ["c"] }, "text_2"],
  ] as const) {
    const path = "query" in body ? "/v1/rerank" : "/v1/score";
    const refused = await post(path, body);
    assert.equal(refused.status, 400, JSON.stringify(body));
    assert.equal((refused.json.error as { param: string }).param, param);
  }
  // The refusals lost nothing: the ranker still answers.
  assert.equal((await post("/v1/rerank", { model: RANKER, query: QUERY, documents: ["a"] })).status, 200);
});

test("ranking requests are counted in /metrics under their own endpoints", async () => {
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  assert.match(metrics, /armature_frontend_requests_total\{[^}]*endpoint="rerank"[^}]*status="success"[^}]*\} [1-9]/);
  assert.match(metrics, /armature_frontend_requests_total\{[^}]*endpoint="score"[^}]*status="success"[^}]*\} [1-9]/);
});
