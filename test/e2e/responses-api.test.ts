import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import OpenAI, { BadRequestError, NotFoundError } from "openai";
import { responsesFields } from "../../src/frontend/responses/responses-request.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { assertMatchesResponsesSchema } from "../helpers/responses-spec.js";

// `armature serve` (llamacpp engine, generated tiny model) driven by the official openai client's
// `responses.create`: every Response and stream event is checked against the OpenAI spec's schemas.
let server: ServeProcess;
let client: OpenAI;
const MODEL = "armature-tiny";

before(async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-e2e-"));
  server = await startServe(["--context-size", "256"], { ARMATURE_CACHE_DIR: cacheDir });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

async function post(path: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

/** The response's output as the spec's `Response` has it, without the SDK's `output_text` convenience. */
function wire(response: OpenAI.Responses.Response): Record<string, unknown> {
  const { output_text: _, ...rest } = response as OpenAI.Responses.Response & { output_text?: string };
  return rest;
}

test("text input gets a Response that conforms, with one message of output_text", async () => {
  const { data, response } = await client.responses
    .create({ model: MODEL, input: "Hello", max_output_tokens: 8, temperature: 0, metadata: { run: "e2e" } })
    .withResponse();
  assertMatchesResponsesSchema("Response", wire(data));
  assert.match(response.headers.get("x-armature-worker") ?? "", /^worker-/);
  assert.equal(data.object, "response");
  assert.match(data.id, /^resp_/);
  assert.ok(data.status === "completed" || data.status === "incomplete", data.status);
  assert.deepEqual(data.metadata, { run: "e2e" });
  assert.equal(data.instructions, null);
  assert.equal(data.output.length, 1);
  const item = data.output[0] as OpenAI.Responses.ResponseOutputMessage;
  assert.deepEqual(
    [item.type, item.role, item.content.length, item.content[0]?.type],
    ["message", "assistant", 1, "output_text"],
  );
  const usage = data.usage as OpenAI.Responses.ResponseUsage;
  assert.ok(usage.output_tokens >= 1 && usage.output_tokens <= 8);
  assert.equal(usage.total_tokens, usage.input_tokens + usage.output_tokens);
  assert.equal(usage.output_tokens_details.reasoning_tokens, 0);
  assert.ok(usage.input_tokens_details.cached_tokens <= usage.input_tokens);
});

test("message items and instructions are the prompt a chat completion of the same messages has", async () => {
  const response = await client.responses.create({
    model: MODEL,
    instructions: "Be brief.",
    input: [
      {
        role: "user",
        content: [
          { type: "input_text", text: "Hello " },
          { type: "input_text", text: "there" },
        ],
      },
      { type: "message", role: "assistant", content: "Hi." },
      { role: "user", content: "Again" },
    ],
    max_output_tokens: 2,
  });
  assertMatchesResponsesSchema("Response", wire(response));
  assert.equal(response.instructions, "Be brief.");
  const chat = await client.chat.completions.create({
    model: MODEL,
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hello there" },
      { role: "assistant", content: "Hi." },
      { role: "user", content: "Again" },
    ],
    max_tokens: 1,
  });
  assert.equal(response.usage?.input_tokens, chat.usage?.prompt_tokens);
});

test("max_output_tokens cuts a response: incomplete, with incomplete_details and exactly that many tokens", async () => {
  // The greedy answer to this prompt is longer than one token.
  const response = await client.responses.create({
    model: MODEL,
    input: "Tell me a story",
    max_output_tokens: 1,
    temperature: 0,
  });
  assertMatchesResponsesSchema("Response", wire(response));
  assert.equal(response.status, "incomplete");
  assert.deepEqual(response.incomplete_details, { reason: "max_output_tokens" });
  assert.equal(response.usage?.output_tokens, 1);
  assert.equal((response.output[0] as OpenAI.Responses.ResponseOutputMessage).status, "incomplete");
  // Greedy here too: a sampled first token can be the end of the turn, which completes the response.
  const stream = await client.responses.create({
    model: MODEL,
    input: "Tell me a story",
    max_output_tokens: 1,
    temperature: 0,
    stream: true,
  });
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  const last = events.at(-1) as OpenAI.Responses.ResponseIncompleteEvent;
  assertMatchesResponsesSchema("ResponseStreamEvent", last);
  assert.equal(last.type, "response.incomplete");
  assert.deepEqual(last.response.incomplete_details, { reason: "max_output_tokens" });
});

test("a streamed response is the Responses event sequence, numbered in order, each event conforming", async () => {
  const ask = { model: MODEL, input: "Hi", max_output_tokens: 6, temperature: 0 };
  const unary = await client.responses.create(ask);
  const stream = await client.responses.create({ ...ask, stream: true });
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  for (const event of events) assertMatchesResponsesSchema("ResponseStreamEvent", event);
  assert.deepEqual(
    events.map((e) => e.sequence_number),
    events.map((_, i) => i),
  );
  const types = events.map((e) => e.type);
  const deltas = types.filter((t) => t === "response.output_text.delta").length;
  assert.ok(deltas >= 1);
  const last = unary.status === "completed" ? "response.completed" : "response.incomplete";
  assert.deepEqual(types, [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    "response.content_part.added",
    ...Array<string>(deltas).fill("response.output_text.delta"),
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    last,
  ]);
  const text = events.flatMap((e) => (e.type === "response.output_text.delta" ? [e.delta] : [])).join("");
  assert.equal(text, unary.output_text);
  const done = events.find((e) => e.type === "response.output_text.done");
  assert.equal(done?.type === "response.output_text.done" && done.text, text);
  const final = events.at(-1) as OpenAI.Responses.ResponseCompletedEvent;
  assert.equal(final.response.status, unary.status);
  assert.equal(final.response.usage?.output_tokens, unary.usage?.output_tokens);
  const created = events[0] as OpenAI.Responses.ResponseCreatedEvent;
  assert.deepEqual([created.response.status, created.response.output], ["in_progress", []]);
  // On the wire each event is `event: <type>` then `data: <json>`.
  const raw = await post("/v1/responses", { ...ask, stream: true });
  for (const block of raw.text.split("\n\n").filter((b) => b !== "")) {
    const [eventLine, dataLine] = block.split("\n");
    assert.equal(
      eventLine?.slice("event: ".length),
      (JSON.parse(dataLine?.slice("data: ".length) ?? "") as { type: string }).type,
    );
  }
});

test("include message.output_text.logprobs: each token's log-probability and its likeliest alternatives, whole and streamed", async () => {
  // One greedy token (the answer to this prompt is longer), so the counts are known.
  const ask = {
    model: MODEL,
    input: "Tell me a story",
    max_output_tokens: 1,
    temperature: 0,
    include: ["message.output_text.logprobs" as const],
    top_logprobs: 3,
  };
  const response = await client.responses.create(ask);
  assertMatchesResponsesSchema("Response", wire(response));
  const part = (response.output[0] as OpenAI.Responses.ResponseOutputMessage).content[0] as OpenAI.Responses.ResponseOutputText;
  assert.equal(part.logprobs?.length, 1);
  const entry = part.logprobs?.[0] as OpenAI.Responses.ResponseOutputText.Logprob;
  assert.equal(entry.token, part.text);
  assert.deepEqual(entry.bytes, [...Buffer.from(entry.token, "utf8")]);
  const tops = entry.top_logprobs.map((t) => t.logprob);
  assert.equal(tops.length, 3);
  assert.deepEqual(
    tops,
    [...tops].sort((a, b) => b - a),
  );
  // Greedy: the chosen token is the likeliest, with the same log-probability.
  assert.equal(entry.logprob, tops[0]);
  assert.ok(tops.reduce((sum, l) => sum + Math.exp(l), 0) <= 1 + 1e-6);
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const event of await client.responses.create({ ...ask, stream: true })) events.push(event);
  for (const event of events) assertMatchesResponsesSchema("ResponseStreamEvent", event);
  const streamed = events.flatMap((e) => (e.type === "response.output_text.delta" ? e.logprobs : []));
  assert.deepEqual(
    streamed.map((l) => l.token),
    [entry.token],
  );
  // The same token; its log-probability agrees to float precision (a cached prefix is not recomputed).
  assert.ok(Math.abs((streamed[0]?.logprob ?? 0) - entry.logprob) < 1e-4);
  const done = events.find((e) => e.type === "response.output_text.done");
  assert.ok(done?.type === "response.output_text.done");
  assert.deepEqual(
    done.logprobs.map((l) => [l.token, l.logprob]),
    streamed.map((l) => [l.token, l.logprob]),
  );
  const refused = await post("/v1/responses", { ...ask, include: ["reasoning.encrypted_content"] });
  assert.deepEqual([refused.status, (JSON.parse(refused.text) as { error: { param: string } }).error.param], [400, "include"]);
  const alone = await post("/v1/responses", { ...ask, include: [] });
  assert.deepEqual([alone.status, (JSON.parse(alone.text) as { error: { param: string } }).error.param], [400, "top_logprobs"]);
});

test("text.format json_schema constrains the output to the schema", async () => {
  const response = await client.responses.create({
    model: MODEL,
    input: "Give me a number",
    max_output_tokens: 60,
    text: {
      format: {
        type: "json_schema",
        name: "n",
        schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false },
      },
    },
  });
  assertMatchesResponsesSchema("Response", wire(response));
  assert.equal(response.text?.format?.type, "json_schema");
  if (response.status === "completed") assert.equal(typeof (JSON.parse(response.output_text) as { n: unknown }).n, "number");
  else assert.match(response.output_text, /^\{/);
});

test("every refused field is refused by name, and store and previous_response_id through the client", async () => {
  const base = { model: MODEL, input: "Hi", max_output_tokens: 2 };
  for (const [field, rule] of Object.entries(responsesFields)) {
    if (rule.status !== "refused") continue;
    const asking = [true, 5, "x", [{ type: "function" }], { a: 1 }].find((v) => !rule.noOp(v));
    const res = await post("/v1/responses", { ...base, [field]: asking });
    assert.equal(res.status, 400, `${field}: ${res.text}`);
    const body = JSON.parse(res.text) as { error: { param: string; code: string; message: string } };
    assertMatchesResponsesSchema("ErrorResponse", body);
    assert.deepEqual([body.error.param, body.error.code], [field, "unsupported_parameter"], field);
  }
  const stored = await client.responses.create({ ...base, store: true }).catch((e: unknown) => e);
  assert.ok(stored instanceof BadRequestError, String(stored));
  assert.equal(stored.param, "store");
  assert.equal((await client.responses.create({ ...base, store: false })).status !== undefined, true);
  const chained = await client.responses.create({ ...base, previous_response_id: "resp_1" }).catch((e: unknown) => e);
  assert.ok(chained instanceof BadRequestError && chained.param === "previous_response_id", String(chained));
  const cases: [unknown, string][] = [
    [[{ role: "user", content: [{ type: "input_image", image_url: "http://x/y.png" }] }], "input[0].content[0].type"],
    [[{ type: "reasoning", id: "rs_1", summary: [] }], "input[0].type"],
    [[{ type: "item_reference", id: "msg_1" }], "input[0].type"],
    [
      [{ type: "function_call_output", call_id: "c", output: [{ type: "input_image", image_url: "http://x/y.png" }] }],
      "input[0].output[0].type",
    ],
    [[{ role: "user", content: "x", phase: "final_answer" }], "input[0].phase"],
    [[{ role: "tool", content: "x" }], "input[0].role"],
  ];
  for (const [input, param] of cases) {
    const res = await post("/v1/responses", { ...base, input });
    assert.equal(res.status, 400, res.text);
    assert.equal((JSON.parse(res.text) as { error: { param: string } }).error.param, param);
  }
  const unknown = await post("/v1/responses", { ...base, max_tokens: 3 });
  assert.deepEqual([unknown.status, (JSON.parse(unknown.text) as { error: { param: string } }).error.param], [400, "max_tokens"]);
  // The context's limits name this API's fields (the server runs with --context-size 256).
  const tooMany = await post("/v1/responses", { ...base, max_output_tokens: 300 });
  assert.deepEqual(
    [tooMany.status, (JSON.parse(tooMany.text) as { error: { param: string } }).error.param],
    [400, "max_output_tokens"],
  );
  const tooLong = await post("/v1/responses", { ...base, input: "word ".repeat(300) });
  const tooLongError = (JSON.parse(tooLong.text) as { error: { param: string; code: string } }).error;
  assert.deepEqual([tooLong.status, tooLongError.param, tooLongError.code], [400, "input", "context_length_exceeded"]);
  const verbose = await post("/v1/responses", { ...base, text: { verbosity: "high" } });
  assert.equal((JSON.parse(verbose.text) as { error: { param: string } }).error.param, "text.verbosity");
});

test("an unknown model is 404 model_not_found", async () => {
  const missing = await client.responses.create({ model: "no-such-model", input: "Hi" }).catch((e: unknown) => e);
  assert.ok(missing instanceof NotFoundError, String(missing));
  assert.equal(missing.code, "model_not_found");
});
