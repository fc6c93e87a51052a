import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { readGgufFileInfo } from "node-llama-cpp";
import OpenAI from "openai";
import { ensureTinyModel } from "../../src/engines/index.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { assertMatchesSchema, sseData } from "../helpers/openai-spec.js";

// logprobs, logit_bias, n, best_of, min_tokens, stop_token_ids, echo and prompt batches on the real
// llama.cpp engine (the generated tiny model), through the official openai client; the expected
// values come from the definitions (a log-probability is ≤ 0, greedy takes the most likely token,
// a +100 bias forces a token), never from the server's own answers to other requests.
let server: ServeProcess;
let client: OpenAI;
let eosTokenId: number;
const MODEL = "armature-tiny";
const messages = [{ role: "user" as const, content: "Tell me a story" }];

before(async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-e2e-"));
  const info = await readGgufFileInfo(await ensureTinyModel(cacheDir));
  eosTokenId = info.metadata.tokenizer.ggml.eos_token_id as number;
  server = await startServe(["--context-size", "256"], { ARMATURE_CACHE_DIR: cacheDir });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

/** The token id of a `token_id:<id>` token (vLLM's `return_tokens_as_token_ids`). */
const idOf = (token: string): number => Number(/^token_id:(\d+)$/.exec(token)?.[1] ?? Number.NaN);

test("greedy chat logprobs: each ≤ 0, top_logprobs sorted and as long as asked, the chosen token the top one", async () => {
  const data = await client.chat.completions.create({
    model: MODEL,
    messages,
    max_tokens: 8,
    temperature: 0,
    ignore_eos: true,
    logprobs: true,
    top_logprobs: 4,
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  assertMatchesSchema("CreateChatCompletionResponse", data);
  const content = data.choices[0]?.logprobs?.content ?? [];
  assert.equal(content.length, 8);
  for (const entry of content) {
    assert.ok(entry.logprob <= 0);
    assert.equal(entry.top_logprobs.length, 4);
    const tops = entry.top_logprobs.map((t) => t.logprob);
    assert.deepEqual(
      tops,
      [...tops].sort((a, b) => b - a),
    );
    // Greedy: the chosen token is the most likely one, with the same log-probability.
    assert.equal(entry.logprob, tops[0]);
    assert.ok(tops.reduce((sum, l) => sum + Math.exp(l), 0) <= 1 + 1e-6);
    assert.deepEqual(entry.bytes, [...Buffer.from(entry.token, "utf8")]);
  }
});

test("streamed chat logprobs arrive with the tokens, one entry per token", async () => {
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages,
    max_tokens: 6,
    temperature: 0,
    ignore_eos: true,
    logprobs: true,
    top_logprobs: 2,
    stream: true,
    stream_options: { include_usage: true },
  } as OpenAI.ChatCompletionCreateParamsStreaming);
  let entries = 0;
  let usage: OpenAI.CompletionUsage | undefined | null;
  for await (const chunk of stream) {
    assertMatchesSchema("CreateChatCompletionStreamResponse", chunk);
    for (const entry of chunk.choices[0]?.logprobs?.content ?? []) {
      entries++;
      assert.equal(entry.top_logprobs.length, 2);
    }
    usage = chunk.usage ?? usage;
  }
  assert.equal(usage?.completion_tokens, 6);
  assert.equal(entries, 6);
});

test("completions logprobs: parallel lists, the chosen token among the top ones, text offsets in order", async () => {
  const data = await client.completions.create({
    model: MODEL,
    prompt: "Once upon a time",
    max_tokens: 5,
    temperature: 0,
    logprobs: 2,
    ignore_eos: true,
  } as OpenAI.CompletionCreateParamsNonStreaming);
  assertMatchesSchema("CreateCompletionResponse", data);
  const lp = data.choices[0]?.logprobs;
  assert.ok(lp?.tokens && lp.token_logprobs && lp.top_logprobs && lp.text_offset);
  assert.equal(lp.tokens.length, 5);
  assert.equal(lp.token_logprobs.length, 5);
  assert.equal(lp.text_offset[0], 0);
  lp.tokens.forEach((token, i) => {
    const top = lp.top_logprobs?.[i] as Record<string, number>;
    // OpenAI: the chosen token's log-probability and the `logprobs` likeliest (so 2 or 3 entries).
    assert.ok(Object.keys(top).length >= 1 && Object.keys(top).length <= 3);
    assert.equal(top[token], lp.token_logprobs?.[i]);
    if (i > 0) assert.equal(lp.text_offset?.[i], (lp.text_offset?.[i - 1] ?? 0) + (lp.tokens?.[i - 1] ?? "").length);
  });
});

test("logit_bias: +100 forces a token, -100 bans the greedy first token", async () => {
  const ask = (bias: Record<string, number>) =>
    client.chat.completions.create({
      model: MODEL,
      messages,
      max_tokens: 3,
      temperature: 0,
      ignore_eos: true,
      logprobs: true,
      logit_bias: bias,
      return_tokens_as_token_ids: true,
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  const forced = await ask({ "42": 100 });
  assert.deepEqual(
    forced.choices[0]?.logprobs?.content?.map((e) => idOf(e.token)),
    [42, 42, 42],
  );
  const plain = await ask({});
  const first = idOf(plain.choices[0]?.logprobs?.content?.[0]?.token ?? "");
  assert.ok(Number.isInteger(first));
  const banned = await ask({ [String(first)]: -100 });
  assert.notEqual(idOf(banned.choices[0]?.logprobs?.content?.[0]?.token ?? ""), first);
});

test("min_tokens holds off an end-of-sequence token that a +100 bias would sample at once", async () => {
  const ask = (extra: Record<string, unknown>) =>
    client.completions.create({
      model: MODEL,
      prompt: "Once upon a time",
      max_tokens: 10,
      temperature: 0,
      logit_bias: { [String(eosTokenId)]: 100 },
      ...extra,
    } as OpenAI.CompletionCreateParamsNonStreaming);
  const early = await ask({});
  assert.equal(early.usage?.completion_tokens, 0);
  assert.equal(early.choices[0]?.finish_reason, "stop");
  const held = await ask({ min_tokens: 4 });
  assert.equal(held.usage?.completion_tokens, 4);
  assert.equal(held.choices[0]?.finish_reason, "stop");
});

test("stop_token_ids ends the output at the token, which is output", async () => {
  const data = await client.chat.completions.create({
    model: MODEL,
    messages,
    max_tokens: 8,
    temperature: 0,
    logprobs: true,
    logit_bias: { "42": 100 },
    stop_token_ids: [42],
    return_tokens_as_token_ids: true,
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  assert.deepEqual(
    data.choices[0]?.logprobs?.content?.map((e) => e.token),
    ["token_id:42"],
  );
  assert.equal(data.choices[0]?.finish_reason, "stop");
  assert.equal(data.usage?.completion_tokens, 1);
});

test("a seed makes sampling repeat; n=3 gives choices 0..2, and usage counts every choice's tokens", async () => {
  const ask = () =>
    client.chat.completions.create({
      model: MODEL,
      messages,
      max_tokens: 5,
      temperature: 1,
      seed: 1234,
      n: 3,
      ignore_eos: true,
    } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  const [a, b] = [await ask(), await ask()];
  assertMatchesSchema("CreateChatCompletionResponse", a);
  assert.deepEqual(
    a.choices.map((c) => c.index),
    [0, 1, 2],
  );
  assert.equal(a.usage?.completion_tokens, 15);
  assert.deepEqual(
    b.choices.map((c) => c.message.content),
    a.choices.map((c) => c.message.content),
  );
});

test("a streamed n=2 interleaves chunks by index and reassembles to the unary choices of the same seed", async () => {
  const body = { model: MODEL, messages, max_tokens: 6, temperature: 1, seed: 99, n: 2, ignore_eos: true };
  const unary = await client.chat.completions.create(body as OpenAI.ChatCompletionCreateParamsNonStreaming);
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } }),
  });
  const events = sseData(await res.text());
  assert.equal(events.at(-1), "[DONE]");
  const texts = ["", ""];
  const finishes: string[] = [];
  for (const event of events.slice(0, -1)) {
    const chunk = JSON.parse(event) as OpenAI.ChatCompletionChunk;
    assertMatchesSchema("CreateChatCompletionStreamResponse", chunk);
    for (const choice of chunk.choices) {
      texts[choice.index] += choice.delta.content ?? "";
      if (choice.finish_reason) finishes[choice.index] = choice.finish_reason;
    }
  }
  assert.deepEqual(
    texts,
    unary.choices.map((c) => c.message.content),
  );
  assert.deepEqual(finishes, ["length", "length"]);
});

test("completions: a batch of prompts with n=2 gives index prompt × n + i; echo puts the prompt first", async () => {
  const data = await client.completions.create({
    model: MODEL,
    prompt: ["Once upon", "The end"],
    n: 2,
    max_tokens: 3,
    temperature: 0,
    echo: true,
    ignore_eos: true,
  } as OpenAI.CompletionCreateParamsNonStreaming);
  assertMatchesSchema("CreateCompletionResponse", data);
  assert.deepEqual(
    data.choices.map((c) => c.index),
    [0, 1, 2, 3],
  );
  const [a, b, c, d] = data.choices.map((ch) => ch.text);
  assert.ok(a?.startsWith("Once upon") && b?.startsWith("Once upon"));
  assert.ok(c?.startsWith("The end") && d?.startsWith("The end"));
  // Greedy: both choices of a prompt are the same text.
  assert.equal(a, b);
  assert.equal(c, d);
  assert.equal(data.usage?.completion_tokens, 12);
});

test("best_of returns the n choices of highest summed log-probability", async () => {
  const data = await client.completions.create({
    model: MODEL,
    prompt: "Once upon a time",
    n: 1,
    best_of: 3,
    max_tokens: 4,
    temperature: 1,
    seed: 5,
    logprobs: 0,
    ignore_eos: true,
  } as OpenAI.CompletionCreateParamsNonStreaming);
  assert.equal(data.choices.length, 1);
  const best = (data.choices[0]?.logprobs?.token_logprobs ?? []).reduce((s, l) => s + (l ?? 0), 0);
  // Each candidate is the n=1 completion of seed 5 + i: the returned one sums highest.
  for (let i = 0; i < 3; i++) {
    const one = await client.completions.create({
      model: MODEL,
      prompt: "Once upon a time",
      max_tokens: 4,
      temperature: 1,
      seed: 5 + i,
      logprobs: 0,
      ignore_eos: true,
    } as OpenAI.CompletionCreateParamsNonStreaming);
    const sum = (one.choices[0]?.logprobs?.token_logprobs ?? []).reduce((s, l) => s + (l ?? 0), 0);
    // Evaluated alone rather than batched with the other two, a candidate's floats may differ slightly.
    assert.ok(sum <= best + 1e-4, `seed ${5 + i}: ${sum} > ${best}`);
  }
  assert.equal(data.usage?.completion_tokens, 12);
});

test("streamed completions with n=2 and logprobs: each choice's entries and text offsets run on across its chunks", async () => {
  const stream = await client.completions.create({
    model: MODEL,
    prompt: "Once upon a time",
    n: 2,
    max_tokens: 5,
    temperature: 0,
    logprobs: 1,
    ignore_eos: true,
    stream: true,
  } as OpenAI.CompletionCreateParamsStreaming);
  const tokens: string[][] = [[], []];
  const offsets: number[][] = [[], []];
  const texts = ["", ""];
  for await (const chunk of stream) {
    // The spec reuses the response schema for legacy stream chunks, whose finish_reason is a string.
    assertMatchesSchema("CreateCompletionResponse", {
      ...chunk,
      choices: chunk.choices.map((c) => ({ ...c, finish_reason: c.finish_reason ?? "stop" })),
    });
    for (const choice of chunk.choices) {
      texts[choice.index] += choice.text;
      tokens[choice.index]?.push(...(choice.logprobs?.tokens ?? []));
      offsets[choice.index]?.push(...(choice.logprobs?.text_offset ?? []));
    }
  }
  for (const i of [0, 1]) {
    assert.equal(tokens[i]?.length, 5);
    const expected = (tokens[i] ?? []).map((_, k) => (tokens[i] ?? []).slice(0, k).join("").length);
    assert.deepEqual(offsets[i], expected);
  }
  assert.equal(texts[0], texts[1], "greedy: both choices say the same");
});
