import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI from "openai";
import { connectSglang, ensureTinyModel, ggufEngineTokenizer, loadTokenizer, type Tokenizer } from "../../src/engines/index.js";
import { parseSglangChunk, sglangLoad } from "../../src/engines/sglang/sglang-engine.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { expectedTokens, type FakeVllm, startFakeSglang, workerOf } from "../helpers/fake-engine-server.js";
import { freshPrompts } from "../helpers/fresh-prompts.js";
import { loraAdmin, modelsWithParents } from "../helpers/lora-admin.js";
import { workersRefusal } from "../helpers/workers-refusal.js";

// `armature serve --engine sglang` in front of two SGLang test doubles (test/helpers/fake-engine-server.ts:
// native /generate, /server_info, /tokenize, /metrics, and the ZMQ KV event publisher with replay;
// no SGLang runs on these machines), one streaming every token so far in each message (SGLang's
// default), the other only the new ones (--incremental-streaming-output).

let model: string;
let tokenizer: Tokenizer;
let engines: FakeVllm[];
let server: ServeProcess;
let client: OpenAI;
const MODEL = "armature-tiny-v2";
const BLOCK = 16;

before(async () => {
  model = await ensureTinyModel(await mkdtemp(join(tmpdir(), "armature-sglang-")));
  tokenizer = await loadTokenizer({ kind: "gguf", path: model });
  const tokenize = (text: string) => tokenizer.encode(text, { special: true });
  // The first SGLang loaded the adapter `sql` at its start (--lora-paths sql=…); the other did not.
  engines = [await startFakeSglang({ tokenize, loras: ["sql"] }), await startFakeSglang({ tokenize, incremental: true })];
  const args = ["--engine", "sglang", "--model", model, "--lora", "sql=/adapters/sql"];
  for (const e of engines) {
    args.push("--engine-url", e.url, "--kv-events-endpoint", e.eventsEndpoint, "--kv-events-replay-endpoint", e.replayEndpoint);
  }
  server = await startServe(args);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
  await Promise.all(engines.map((e) => e.close()));
});

/** A prompt of `blocks` whole blocks nobody sent before. */
const freshPrompt = freshPrompts(BLOCK);

/** Sends `prompt` to an SGLang directly, as another client of it would (armature does not see it). */
async function sendDirectly(engine: FakeVllm, prompt: readonly number[]): Promise<void> {
  const response = await fetch(`${engine.url}/generate`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ input_ids: prompt, sampling_params: { max_new_tokens: 1 }, stream: true }),
  });
  await response.text();
}

for (const index of [0, 1]) {
  const mode = index === 0 ? "every token so far" : "new tokens only";
  test(`streams of ${mode}: a prefix cached there draws the request, whose tokens and usage are SGLang's`, async () => {
    const engine = engines[index] as FakeVllm;
    const prefix = freshPrompt(4);
    await sendDirectly(engine, prefix);
    await new Promise((r) => setTimeout(r, 200));
    const prompt = [...prefix, 5, 6, 7];
    const { data, response } = await client.completions
      .create({ model: MODEL, prompt, max_tokens: 12, temperature: 0 })
      .withResponse();
    assert.equal(response.headers.get("x-armature-worker"), await workerOf(server.url, engine));
    assert.equal(data.choices[0]?.text, tokenizer.decode(expectedTokens(prompt, 12)));
    assert.equal(data.choices[0]?.finish_reason, "length");
    assert.equal(data.usage?.completion_tokens, 12);
    assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, 4 * BLOCK);
    // Streamed too: the same tokens, counted once each.
    const stream = await client.completions.create({ model: MODEL, prompt, max_tokens: 12, temperature: 0, stream: true });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.text ?? "";
    assert.equal(text, tokenizer.decode(expectedTokens(prompt, 12)));
  });
}

test("SGLang's LoRA adapters: named by --lora where SGLang serves them, sent as lora_path, keyed by their seed, loaded at run time", async () => {
  assert.deepEqual(await modelsWithParents(client), [
    [MODEL, null],
    ["sql", MODEL],
  ]);
  const prompt = freshPrompt(3);
  const first = await client.completions.create({ model: "sql", prompt, max_tokens: 2, temperature: 0 }).withResponse();
  assert.equal(first.response.headers.get("x-armature-worker"), await workerOf(server.url, engines[0] as FakeVllm));
  assert.equal(engines[0]?.bodies.at(-1)?.lora_path, "sql");
  await new Promise((r) => setTimeout(r, 200));
  const again = await client.completions.create({ model: "sql", prompt, max_tokens: 2, temperature: 0 }).withResponse();
  assert.equal(again.response.headers.get("x-armature-overlap-blocks"), "3");
  const base = await client.completions.create({ model: MODEL, prompt, max_tokens: 2, temperature: 0 }).withResponse();
  assert.equal(base.response.headers.get("x-armature-overlap-blocks"), "0");
  const baseWorker = base.response.headers.get("x-armature-worker");
  const baseEngine = engines[(await workerOf(server.url, engines[0] as FakeVllm)) === baseWorker ? 0 : 1];
  assert.equal("lora_path" in (baseEngine?.bodies.at(-1) ?? {}), false, "a base-model request names no adapter");

  const load = await loraAdmin(server.url, "load", { lora_name: "chat", lora_path: "/adapters/chat" });
  assert.equal(load.text, "Success: LoRA adapter 'chat' added successfully.");
  for (const engine of engines)
    assert.deepEqual(engine.loraCalls.at(-1), { route: "/load_lora_adapter", lora_name: "chat", lora_path: "/adapters/chat" });
  assert.equal((await client.completions.create({ model: "chat", prompt: freshPrompt(1), max_tokens: 1 })).model, "chat");
  assert.equal((await loraAdmin(server.url, "unload", { lora_name: "chat" })).status, 200);
  // A name no SGLang serves stops the start.
  assert.match(
    await workersRefusal([
      "--engine",
      "sglang",
      "--model",
      model,
      "--engine-url",
      engines[1]?.url as string,
      "--lora",
      "sql=/adapters/sql",
    ]),
    /--lora sql=\/adapters\/sql: no sglang at --engine-url serves an adapter named sql/,
  );
});

test("a batch the subscriber missed is fetched from the replay socket at the next one", async () => {
  const engine = engines[1] as FakeVllm;
  const missed = freshPrompt(5);
  await sendDirectly(engines[0] as FakeVllm, missed.slice(0, 2 * BLOCK));
  engine.dropNext(1);
  await sendDirectly(engine, missed);
  await sendDirectly(engine, freshPrompt(1));
  await new Promise((r) => setTimeout(r, 300));
  const { response, data } = await client.completions
    .create({ model: MODEL, prompt: [...missed, 9], max_tokens: 2, temperature: 0 })
    .withResponse();
  assert.equal(response.headers.get("x-armature-worker"), await workerOf(server.url, engine));
  assert.equal(data.usage?.prompt_tokens_details?.cached_tokens, 5 * BLOCK);
});

test("what the sglang worker does not map is refused by name", async () => {
  const response = await fetch(`${server.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, prompt: "Hi", max_tokens: 4, logprobs: 2 }),
  });
  assert.equal(response.status, 400);
  const body = (await response.json()) as { error: { param: string; message: string } };
  assert.equal(body.error.param, "logprobs");
  assert.match(body.error.message, /not served by sglang workers/);
});

test("a --block-size other than SGLang's page size, and a server that is no SGLang, are refused by name", async () => {
  const engine = engines[0] as FakeVllm;
  const engineTokenizer = await ggufEngineTokenizer(model);
  await assert.rejects(
    connectSglang({ url: engine.url, tokenizer: engineTokenizer, blockSize: 32 }),
    /--block-size 32: the sglang at .* keeps its KV cache in pages of 16 tokens/,
  );
  const impostor: Server = createServer((req, res) => {
    res.writeHead(req.url === "/health" ? 200 : 404, { "content-type": "application/json" });
    res.end(req.url === "/v1/models" ? '{"data":[{"id":"m"}]}' : '{"detail":"Not Found"}');
  });
  await new Promise<void>((resolve) => impostor.listen(0, "127.0.0.1", resolve));
  try {
    const url = `http://127.0.0.1:${(impostor.address() as { port: number }).port}`;
    await assert.rejects(
      connectSglang({ url, tokenizer: engineTokenizer, startTimeoutMs: 2000 }),
      /GET \/server_info has no page_size; is it an sglang\?/,
    );
  } finally {
    impostor.close();
  }
});

test("stream messages that are not SGLang's fail the request naming the URL; an engine abort is an error", () => {
  const url = "http://h:1";
  const message = (ids: unknown, finish: unknown = null) =>
    JSON.stringify({ output_ids: ids, meta_info: { finish_reason: finish, cached_tokens: 3 } });
  assert.deepEqual(parseSglangChunk(url, message([1, 2, 3]), 2), { tokens: [3], finishReason: undefined, cachedTokens: 3 });
  assert.deepEqual(parseSglangChunk(url, message([4], { type: "stop", matched: 2 }), 0).finishReason, "stop");
  assert.deepEqual(parseSglangChunk(url, "[DONE]", 5), { tokens: [], done: true });
  assert.throws(() => parseSglangChunk(url, "{not json", 0), /sglang at http:\/\/h:1 sent a stream message that is not JSON/);
  assert.throws(() => parseSglangChunk(url, message(["a"]), 0), /output_ids are not token ids/);
  assert.throws(() => parseSglangChunk(url, message([1]), 2), /1 output_ids after 2 were read/);
  assert.throws(() => parseSglangChunk(url, JSON.stringify({ output_ids: [1] }), 0), /without meta_info/);
  assert.throws(() => parseSglangChunk(url, message([1], { type: "weird" }), 0), /a finish_reason/);
  assert.throws(
    () => parseSglangChunk(url, message([1], { type: "abort", message: "prompt too long" }), 0),
    /aborted the request: prompt too long/,
  );
  assert.throws(() => parseSglangChunk(url, JSON.stringify({ error: { message: "boom" } }), 0), /failed the request: boom/);
});

test("SGLang's /metrics gauges become the worker's load", () => {
  // The exposition SGLang writes with --enable-metrics (labels as its metrics collector sets them).
  const text = [
    "# HELP sglang:num_running_reqs The number of running requests.",
    "# TYPE sglang:num_running_reqs gauge",
    'sglang:num_running_reqs{engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"} 7.0',
    "# TYPE sglang:num_queue_reqs gauge",
    'sglang:num_queue_reqs{engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"} 3.0',
    "# TYPE sglang:token_usage gauge",
    'sglang:token_usage{engine_type="unified",model_name="m",pp_rank="0",tp_rank="0"} 0.25',
  ].join("\n");
  assert.deepEqual(sglangLoad(text, 1000), { activeRequests: 7, waitingRequests: 3, activeKvBlocks: 250 });
  assert.deepEqual(sglangLoad("", 1000), {});
});

test("split prefill and decode through SGLang's bootstrap: both halves at once, one room, the prefill server's bootstrap", async () => {
  const tokenize = (text: string) => tokenizer.encode(text, { special: true });
  const decodeEngine = await startFakeSglang({ tokenize, disaggregationMode: "decode" });
  const prefillEngine = await startFakeSglang({ tokenize, disaggregationMode: "prefill", bootstrapPort: 9123 });
  try {
    // A server in a disaggregation mode cannot serve whole requests, nor the other half.
    const engineTokenizer = await ggufEngineTokenizer(model);
    await assert.rejects(
      connectSglang({ url: prefillEngine.url, tokenizer: engineTokenizer }),
      /an aggregated worker needs an sglang started with --disaggregation-mode null, and this one runs in mode prefill/,
    );
    await assert.rejects(
      connectSglang({ url: prefillEngine.url, tokenizer: engineTokenizer, role: "decode" }),
      /a decode worker needs an sglang started with --disaggregation-mode decode, and this one runs in mode prefill/,
    );
    const split = await startServe([
      "--engine",
      "sglang",
      "--model",
      model,
      "--engine-url",
      decodeEngine.url,
      "--prefill-engine-url",
      prefillEngine.url,
    ]);
    try {
      const splitClient = new OpenAI({ baseURL: `${split.url}/v1`, apiKey: "unused", maxRetries: 0 });
      for (const [round, stream] of [
        [1, false],
        [2, true],
      ] as const) {
        const prompt = freshPrompt(2);
        let text = "";
        if (stream) {
          const chunks = await splitClient.completions.create({ model: MODEL, prompt, max_tokens: 8, temperature: 0, stream });
          for await (const chunk of chunks) text += chunk.choices[0]?.text ?? "";
        } else {
          const response = await splitClient.completions.create({ model: MODEL, prompt, max_tokens: 8, temperature: 0 });
          text = response.choices[0]?.text ?? "";
        }
        assert.equal(text, tokenizer.decode(expectedTokens(prompt, 8)));
        assert.deepEqual([prefillEngine.prefills, decodeEngine.pulls], [round, round]);
      }
    } finally {
      assert.equal(await split.stop("SIGTERM"), 0, split.output());
    }
  } finally {
    await Promise.all([decodeEngine.close(), prefillEngine.close()]);
  }
});

test("structured output goes to SGLang as its own json_schema", async () => {
  const schema = { type: "object", properties: { city: { type: "string", maxLength: 12 } }, required: ["city"] };
  await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: "user", content: "Where?" }],
    max_tokens: 4,
    response_format: { type: "json_schema", json_schema: { name: "where", schema } },
  });
  const sent = engines
    .flatMap((e) => e.bodies)
    .find((b) => (b.sampling_params as { json_schema?: unknown }).json_schema !== undefined);
  assert.ok(sent, "a body with a json_schema reached SGLang");
  assert.deepEqual(JSON.parse(String((sent.sampling_params as { json_schema: string }).json_schema)), schema);
});
