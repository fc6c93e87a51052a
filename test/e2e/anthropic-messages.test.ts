import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import Anthropic, { BadRequestError, NotFoundError } from "@anthropic-ai/sdk";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";

// `armature serve` (llamacpp engine, generated tiny model) driven by the official Anthropic SDK:
// Messages plain and streamed, count_tokens, stop reasons, and every refused field in Anthropic's
// error shape. Anthropic's sampling fields (temperature, top_k) are sent as extra body fields: the
// SDK's types no longer list them, the API still takes them.
let server: ServeProcess;
let client: Anthropic;
const MODEL = "armature-tiny";
const greedy = { temperature: 0 } as Record<string, unknown>;

before(async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-e2e-"));
  server = await startServe(["--context-size", "256"], { ARMATURE_CACHE_DIR: cacheDir });
  client = new Anthropic({ baseURL: server.url, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

async function post(path: string, body: unknown): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(`${server.url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": "unused", "anthropic-version": "2023-06-01" },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

function textOf(message: Anthropic.Message): string {
  return message.content.map((b) => (b.type === "text" ? b.text : "")).join("");
}

test("a message comes back as Anthropic's Message, its prompt counted as count_tokens counts it", async () => {
  const params = {
    model: MODEL,
    max_tokens: 6,
    system: [{ type: "text" as const, text: "Be brief." }],
    messages: [
      {
        role: "user" as const,
        content: [
          { type: "text" as const, text: "Hello " },
          { type: "text" as const, text: "there" },
        ],
      },
    ],
  };
  const { data, response } = await client.messages.create({ ...params, ...greedy, metadata: { user_id: "u-1" } }).withResponse();
  assert.match(response.headers.get("x-armature-worker") ?? "", /^worker-/);
  assert.equal(data.type, "message");
  assert.equal(data.role, "assistant");
  assert.equal(data.model, MODEL);
  assert.match(data.id, /^msg_/);
  assert.equal(data.content.length, 1);
  assert.equal(data.content[0]?.type, "text");
  assert.ok(["end_turn", "max_tokens"].includes(data.stop_reason ?? ""), String(data.stop_reason));
  assert.equal(data.stop_sequence, null);
  assert.ok(data.usage.output_tokens >= 1 && data.usage.output_tokens <= 6);
  const counted = await client.messages.countTokens({ model: MODEL, system: params.system, messages: params.messages });
  assert.equal(data.usage.input_tokens + (data.usage.cache_read_input_tokens ?? 0), counted.input_tokens);
  // The same conversation as a chat completion, through /tokenize: the system prompt is its first message.
  const tokenized = await post("/tokenize", {
    model: MODEL,
    messages: [
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hello there" },
    ],
  });
  assert.equal((JSON.parse(tokenized.text) as { count: number }).count, counted.input_tokens);
});

test("max_tokens ends a message with stop_reason max_tokens after exactly that many tokens", async () => {
  // The greedy answer to this prompt is longer than one token.
  const message = await client.messages.create({
    model: MODEL,
    max_tokens: 1,
    messages: [{ role: "user", content: "Tell me a story" }],
    ...greedy,
  });
  assert.equal(message.stop_reason, "max_tokens");
  assert.equal(message.stop_sequence, null);
  assert.equal(message.usage.output_tokens, 1);
});

test("a stop sequence ends the text before it, with stop_reason stop_sequence naming it", async () => {
  const ask = { model: MODEL, messages: [{ role: "user" as const, content: "Tell me a story" }], ...greedy };
  const full = textOf(await client.messages.create({ ...ask, max_tokens: 24 }));
  const chars = [...full];
  assert.ok(chars.length >= 2, `the greedy answer is too short to cut: ${JSON.stringify(full)}`);
  // Cut at the answer's second character: the text before its first occurrence comes back.
  const stop = chars.slice(1, 3).join("");
  const cut = await client.messages.create({ ...ask, max_tokens: 24, stop_sequences: ["never-generated-§", stop] });
  assert.equal(cut.stop_reason, "stop_sequence");
  assert.equal(cut.stop_sequence, stop);
  assert.equal(textOf(cut), full.slice(0, full.indexOf(stop)));
});

test("a streamed message is Anthropic's documented event sequence, each event named as its type", async () => {
  const body = { model: MODEL, max_tokens: 8, messages: [{ role: "user", content: "Hi" }], temperature: 0 };
  const unary = JSON.parse((await post("/v1/messages", body)).text) as Anthropic.Message;
  const res = await post("/v1/messages", { ...body, stream: true });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type") ?? "", /^text\/event-stream/);
  const events = res.text
    .split("\n\n")
    .filter((block) => block !== "")
    .map((block) => {
      const [eventLine, dataLine, ...rest] = block.split("\n");
      assert.deepEqual(rest, [], block);
      assert.match(eventLine ?? "", /^event: /);
      const data = JSON.parse((dataLine ?? "").replace(/^data: /, "")) as { type: string } & Record<string, unknown>;
      assert.equal(eventLine?.slice("event: ".length), data.type);
      return data;
    });
  const types = events.map((e) => e.type);
  const deltas = types.filter((t) => t === "content_block_delta").length;
  assert.ok(deltas >= 1);
  assert.deepEqual(types, [
    "message_start",
    "content_block_start",
    "ping",
    ...Array<string>(deltas).fill("content_block_delta"),
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
  const start = events[0] as unknown as { message: Anthropic.Message };
  assert.deepEqual([start.message.content, start.message.stop_reason, start.message.role], [[], null, "assistant"]);
  assert.deepEqual(events[1], { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } });
  const text = events
    .filter((e) => e.type === "content_block_delta")
    .map((e) => (e.delta as { type: string; text: string }).text)
    .join("");
  assert.equal(text, textOf(unary));
  const delta = events.at(-2) as unknown as Anthropic.RawMessageDeltaEvent;
  assert.equal(delta.delta.stop_reason, unary.stop_reason);
  assert.equal(delta.usage.output_tokens, unary.usage.output_tokens);
});

test("the SDK's messages.stream() accumulates the events into the final message", async () => {
  const stream = client.messages.stream({
    model: MODEL,
    max_tokens: 1,
    messages: [{ role: "user", content: "Hi" }],
    ...greedy,
  });
  let streamed = "";
  stream.on("text", (delta) => {
    streamed += delta;
  });
  const final = await stream.finalMessage();
  assert.equal(textOf(final), streamed);
  assert.equal(final.stop_reason, "max_tokens");
  assert.equal(final.usage.output_tokens, 1);
  const raw = await client.messages.create({
    model: MODEL,
    max_tokens: 5,
    messages: [{ role: "user", content: "Hi" }],
    stream: true,
  });
  const seen: string[] = [];
  for await (const event of raw) seen.push(event.type);
  assert.equal(seen[0], "message_start");
  assert.equal(seen.at(-1), "message_stop");
});

test("fields not served are refused by name with a 400 in Anthropic's error shape", async () => {
  const base = { model: MODEL, max_tokens: 4, messages: [{ role: "user", content: "Hi" }] };
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ["server tool", { tools: [{ type: "web_search_20250305", name: "web_search" }] }, /'tools\[0\]\.type'/],
    ["tool_choice without tools", { tool_choice: { type: "any" } }, /'tool_choice'/],
    ["thinking", { thinking: { type: "enabled", budget_tokens: 1024 } }, /'thinking'/],
    ["output_config.effort", { output_config: { effort: "low" } }, /'output_config\.effort'/],
    ["output_config.format.type", { output_config: { format: { type: "xml" } } }, /'output_config\.format\.type'/],
    ["container", { container: "c-1" }, /'container'/],
    ["diagnostics", { diagnostics: { previous_message_id: "m" } }, /'diagnostics'/],
    ["inference_geo", { inference_geo: "us" }, /'inference_geo'/],
    ["speed", { speed: "fast" }, /'speed'/],
    ["service_tier", { service_tier: "priority" }, /'service_tier'/],
    ["unknown field", { top_a: 1 }, /top_a/],
    ["max_tokens missing", { max_tokens: undefined }, /'max_tokens' is required/],
    [
      "image block",
      { messages: [{ role: "user", content: [{ type: "image", source: { type: "url", url: "http://x/y.png" } }] }] },
      /'messages\[0\]\.content\[0\]'.*"image"/,
    ],
    [
      "document block",
      { messages: [{ role: "user", content: [{ type: "document", source: { type: "text", data: "d" } }] }] },
      /"document"/,
    ],
    ["citations", { messages: [{ role: "user", content: [{ type: "text", text: "x", citations: [{}] }] }] }, /citations/],
    [
      "prefill",
      {
        messages: [
          { role: "user", content: "Hi" },
          { role: "assistant", content: "The answer is" },
        ],
      },
      /prefill/,
    ],
  ];
  for (const [name, extra, message] of cases) {
    const res = await post("/v1/messages", { ...base, ...extra });
    assert.equal(res.status, 400, `${name}: ${res.text}`);
    const body = JSON.parse(res.text) as { type: string; error: { type: string; message: string }; request_id: string };
    assert.equal(body.type, "error", name);
    assert.equal(body.error.type, "invalid_request_error", name);
    assert.match(body.error.message, message, name);
    assert.equal(body.request_id, res.headers.get("x-request-id"), name);
  }
  const refused = await client.messages.create({
    ...base,
    messages: [{ role: "user", content: "Hi" }],
    tools: [] as never[],
    thinking: { type: "disabled" },
  });
  assert.equal(refused.type, "message", "the no-op values are taken");
  const viaSdk = await client.messages
    .countTokens({ model: MODEL, messages: base.messages as never, tools: [{ type: "bash_20250124", name: "bash" }] })
    .catch((e: unknown) => e);
  assert.ok(viaSdk instanceof BadRequestError, String(viaSdk));
  assert.match(viaSdk.message, /'tools\[0\]\.type'/);
});

test("output_config.format json_schema constrains the text to the schema", async () => {
  const schema = { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false };
  const message = await client.messages.create({
    model: MODEL,
    max_tokens: 60,
    messages: [{ role: "user", content: "Give me a number" }],
    output_config: { format: { type: "json_schema", schema } },
  });
  const text = textOf(message);
  if (message.stop_reason === "end_turn") assert.equal(typeof (JSON.parse(text) as { n: unknown }).n, "number");
  else assert.match(text, /^\{/);
  const counted = await client.messages.countTokens({
    model: MODEL,
    messages: [{ role: "user", content: "Give me a number" }],
    output_config: { format: { type: "json_schema", schema } },
  });
  assert.equal(counted.input_tokens, message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0));
});

test("an unknown model is 404 not_found_error", async () => {
  const missing = await client.messages
    .create({ model: "no-such-model", max_tokens: 4, messages: [{ role: "user", content: "Hi" }] })
    .catch((e: unknown) => e);
  assert.ok(missing instanceof NotFoundError, String(missing));
  assert.equal((missing.error as { error: { type: string } }).error.type, "not_found_error");
  const counted = await post("/v1/messages/count_tokens", {
    model: "no-such-model",
    messages: [{ role: "user", content: "Hi" }],
  });
  assert.equal(counted.status, 404);
});
