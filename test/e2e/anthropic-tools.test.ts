import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import Anthropic from "@anthropic-ai/sdk";
import { Ajv2020 } from "ajv/dist/2020.js";
import OpenAI from "openai";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";

// Client tools on POST /v1/messages through the chat completions' tool machinery (constrained
// decoding for tool_choice any and a named tool), driven by the official Anthropic SDK.
let server: ServeProcess;
let client: Anthropic;
const MODEL = "armature-tiny";

const weatherSchema = {
  type: "object" as const,
  properties: { city: { type: "string", maxLength: 12 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
  required: ["city", "unit"],
  additionalProperties: false,
};
const timeSchema = {
  type: "object" as const,
  properties: { zone: { enum: ["UTC", "CET"] }, hours: { type: "integer" } },
  required: ["zone", "hours"],
};
const tools = [
  { name: "get_weather", description: "Weather in a city", input_schema: weatherSchema },
  { name: "get_time", description: "Time in a zone", input_schema: timeSchema },
];
const ajv = new Ajv2020({ strict: false });
const validInput = { get_weather: ajv.compile(weatherSchema), get_time: ajv.compile(timeSchema) };
const messages = [{ role: "user" as const, content: "What is the weather in Oslo?" }];

function assertValidUse(name: string, input: unknown): void {
  const validate = validInput[name as keyof typeof validInput];
  assert.ok(validate, `unknown tool ${name}`);
  assert.ok(validate(input), `${name}(${JSON.stringify(input)}): ${JSON.stringify(validate.errors)}`);
}

before(async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-e2e-"));
  server = await startServe(["--context-size", "1024"], { ARMATURE_CACHE_DIR: cacheDir });
  client = new Anthropic({ baseURL: server.url, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

test("tool_choice any: the answer is tool_use blocks whose input fits the schema, stop_reason tool_use", async () => {
  const message = await client.messages.create({
    model: MODEL,
    max_tokens: 200,
    messages,
    tools,
    tool_choice: { type: "any", disable_parallel_tool_use: true },
    temperature: 0,
  } as Anthropic.MessageCreateParamsNonStreaming);
  assert.equal(message.stop_reason, "tool_use");
  assert.equal(message.content.length, 1);
  const use = message.content[0];
  assert.ok(use?.type === "tool_use", JSON.stringify(message.content));
  assert.match(use.id, /^toolu_[0-9a-f]{24}$/);
  assertValidUse(use.name, use.input);
});

test("a named tool is the one used; streamed, its input arrives as input_json_delta and the SDK assembles it", async () => {
  const params = {
    model: MODEL,
    max_tokens: 200,
    messages,
    tools,
    tool_choice: { type: "tool" as const, name: "get_time", disable_parallel_tool_use: true },
  };
  const whole = await client.messages.create(params);
  assert.deepEqual(
    whole.content.map((b) => [b.type, b.type === "tool_use" ? b.name : ""]),
    [["tool_use", "get_time"]],
  );
  const raw: string[] = [];
  const stream = client.messages.stream(params);
  stream.on("streamEvent", (event) => raw.push(event.type === "content_block_delta" ? event.delta.type : event.type));
  const final = await stream.finalMessage();
  assert.equal(final.stop_reason, "tool_use");
  const use = final.content[0];
  assert.ok(use?.type === "tool_use" && use.name === "get_time", JSON.stringify(final.content));
  assertValidUse("get_time", use.input);
  const deltas = raw.filter((t) => t === "input_json_delta").length;
  assert.ok(deltas >= 1);
  assert.deepEqual(raw, [
    "message_start",
    "content_block_start",
    ...Array<string>(deltas).fill("input_json_delta"),
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
});

test("tool_use and tool_result blocks are the prompt a chat completion with tool_calls and a tool message has", async () => {
  const input = { city: "Oslo", unit: "celsius" };
  const conversation: Anthropic.MessageParam[] = [
    ...messages,
    { role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "get_weather", input }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "4 degrees" }] },
  ];
  const counted = await client.messages.countTokens({ model: MODEL, messages: conversation, tools });
  const openai = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const chat = await openai.chat.completions.create({
    model: MODEL,
    tools: tools.map((t) => ({
      type: "function" as const,
      function: { name: t.name, description: t.description, parameters: t.input_schema },
    })),
    messages: [
      ...messages,
      {
        role: "assistant",
        content: "",
        tool_calls: [{ id: "toolu_1", type: "function", function: { name: "get_weather", arguments: JSON.stringify(input) } }],
      },
      { role: "tool", tool_call_id: "toolu_1", content: "4 degrees" },
    ],
    max_tokens: 1,
  });
  assert.equal(counted.input_tokens, chat.usage?.prompt_tokens);
  const message = await client.messages.create({ model: MODEL, max_tokens: 1, messages: conversation, tools });
  assert.equal(message.usage.input_tokens + (message.usage.cache_read_input_tokens ?? 0), counted.input_tokens);
});
