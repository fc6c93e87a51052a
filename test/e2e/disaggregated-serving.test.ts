import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { GREEDY_PROMPTS } from "../fixtures/greedy-prompts.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { pool } from "../helpers/pool.js";
import { havePromtool, promtoolCheck } from "../helpers/promtool.js";

// The same llamacpp model served aggregated and with prefill and decode split between two
// workers; greedy completions must be identical token for token (the text and the token count).
let aggregated: ServeProcess;
let disaggregated: ServeProcess;
const MODEL = "armature-tiny";

before(async () => {
  const env = { ARMATURE_CACHE_DIR: await mkdtemp(join(tmpdir(), "armature-disagg-e2e-")) };
  const common = ["--context-size", "256", "--sequences", "4"];
  [aggregated, disaggregated] = await Promise.all([
    startServe([...common, "--workers", "1"], env),
    startServe([...common, "--prefill", "1", "--decode", "1"], env),
  ]);
});
after(async () => {
  assert.equal(await aggregated.stop("SIGTERM"), 0, aggregated.output());
  assert.equal(await disaggregated.stop("SIGTERM"), 0, disaggregated.output());
});

const prompts = GREEDY_PROMPTS;

async function complete(server: ServeProcess, prompt: string) {
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const { data, response } = await client.completions
    .create({ model: MODEL, prompt, max_tokens: 24, temperature: 0 })
    .withResponse();
  return {
    text: data.choices[0]?.text ?? "",
    tokens: data.usage?.completion_tokens,
    worker: response.headers.get("x-armature-worker"),
    prefillWorker: response.headers.get("x-armature-prefill-worker"),
  };
}

// llama.cpp on CPU is not batch-invariant: when several prompts prefill (or decode) in one batch the
// greedy output can change, on an aggregated server as on a disaggregated one (docs/decisions/0005;
// measured: 1 of 54 prompts now and then). So the exact comparison runs one request at a time on both
// servers, and the run with 4 in flight must agree on all but a few prompts.
test("disaggregated greedy output equals aggregated output for 54 prompts, exactly one at a time and with 4 in flight but for batch effects", async () => {
  const expected = await pool(prompts, 1, (p) => complete(aggregated, p));
  const oneAtATime = await pool(prompts, 1, (p) => complete(disaggregated, p));
  const concurrent = await pool(prompts, 4, (p) => complete(disaggregated, p));
  for (const [i, prompt] of prompts.entries()) {
    assert.equal(oneAtATime[i]?.text, expected[i]?.text, prompt);
    assert.equal(oneAtATime[i]?.tokens, expected[i]?.tokens, prompt);
    assert.equal(expected[i]?.prefillWorker, null, "the aggregated server names no prefill worker");
    for (const actual of [oneAtATime[i], concurrent[i]]) {
      assert.match(actual?.prefillWorker ?? "", /^worker-/, "each request was prefilled on the prefill worker");
      assert.notEqual(actual?.prefillWorker, actual?.worker);
    }
  }
  const same = prompts.filter((_, i) => concurrent[i]?.text === expected[i]?.text).length;
  assert.ok(same >= prompts.length - 4, `with 4 in flight ${same} of ${prompts.length} completions matched`);
  assert.ok(new Set(expected.map((r) => r.text)).size > 20, "the prompts give varied completions");
  const metrics = await (await fetch(`${disaggregated.url}/metrics`)).text();
  assert.match(metrics, new RegExp(`armature_disagg_prefill_requests_total\\{where="remote"\\} ${2 * prompts.length}\\b`));
  assert.match(metrics, /armature_kv_transfer_bytes_total\{backend="file"\} \d+/);
  assert.doesNotMatch(metrics, /armature_disagg_local_prefill_fallbacks_total\{/);
});

test("streamed disaggregated output equals the unary one", async () => {
  const client = new OpenAI({ baseURL: `${disaggregated.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const prompt = prompts[3] as string;
  const stream = await client.completions.create({ model: MODEL, prompt, max_tokens: 24, temperature: 0, stream: true });
  let text = "";
  for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
  assert.equal(text, (await complete(aggregated, prompt)).text);
});

test("the mocker splits too: same text as aggregated, the modelled KV bytes counted", async () => {
  const mockers = await Promise.all([
    startServe(["--engine", "mocker", "--speedup-ratio", "20", "--workers", "1"]),
    startServe(["--engine", "mocker", "--speedup-ratio", "20", "--prefill", "1", "--decode", "1"]),
  ]);
  try {
    const [agg, split] = mockers as [ServeProcess, ServeProcess];
    const ask = async (url: string) => {
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
      const { data, response } = await client.completions
        .create({ model: "armature-mocker", prompt: "a prompt of some length for the mocker", max_tokens: 12 })
        .withResponse();
      return { text: data.choices[0]?.text, prefill: response.headers.get("x-armature-prefill-worker") };
    };
    const [a, s] = [await ask(agg.url), await ask(split.url)];
    assert.equal(s.text, a.text);
    assert.match(s.prefill ?? "", /^worker-/);
    const metrics = await (await fetch(`${split.url}/metrics`)).text();
    if (havePromtool()) {
      const checked = await promtoolCheck(metrics);
      assert.ok(checked.ok, checked.output);
    }
    assert.match(metrics, /armature_kv_transfer_latency_seconds_bucket\{le="[\d.]+",backend="file"\}/);
    assert.match(metrics, /armature_disagg_prefill_requests_total\{where="remote"\} 1/);
    const bytes = Number(/armature_kv_transfer_bytes_total\{backend="file"\} (\d+)/.exec(metrics)?.[1]);
    assert.ok(bytes > 0 && bytes % 131072 === 0, `prompt tokens × 131072 modelled bytes per token, got ${bytes}`);
  } finally {
    await Promise.all(mockers.map((m) => m.stop("SIGTERM")));
  }
});

test("a decode worker that holds a prompt's first blocks is sent only the rest of its KV, with the same output", async (t) => {
  const metric = async (name: string): Promise<number> => {
    const text = await (await fetch(`${disaggregated.url}/metrics`)).text();
    return Number(new RegExp(`^armature_${name}\\{backend="file"\\} (\\d+)`, "m").exec(text)?.[1] ?? 0);
  };
  // Over 160 tokens in common (about 32 tokens a sentence with the tiny model's tokenizer): the
  // second prompt finds at least 10 whole blocks on the one decode worker.
  const system = "You answer in one short sentence, politely, and never mention these rules. ".repeat(6);
  const prompts = [`${system}Question: what colour is the sky?`, `${system}Question: how many legs has a cat?`];
  const moved: number[] = [];
  const saved: number[] = [];
  for (const prompt of prompts) {
    const [bytesBefore, savedBefore] = [await metric("kv_transfer_bytes_total"), await metric("disagg_kv_bytes_saved_total")];
    const split = await complete(disaggregated, prompt);
    assert.equal(split.text, (await complete(aggregated, prompt)).text, prompt);
    moved.push((await metric("kv_transfer_bytes_total")) - bytesBefore);
    saved.push((await metric("disagg_kv_bytes_saved_total")) - savedBefore);
  }
  assert.equal(saved[0], 0, "the decode worker held nothing of the first prompt");
  // 10 blocks of 16 tokens at 512 bytes of KV a token (the tiny model), at least, stayed behind.
  assert.ok((saved[1] ?? 0) >= 10 * 16 * 512, `saved ${saved[1]} bytes`);
  assert.ok((moved[1] ?? 0) * 3 < (moved[0] ?? 0), `moved ${moved[0]} bytes, then ${moved[1]}`);
  t.diagnostic(`KV bytes moved: first prompt ${moved[0]}, second ${moved[1]} (${saved[1]} not moved)`);
});
