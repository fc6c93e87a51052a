import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import OpenAI, { BadRequestError } from "openai";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { assertMatchesResponsesSchema } from "../helpers/responses-spec.js";

// Function tools on POST /v1/responses through the chat completions' tool machinery (constrained
// decoding for required and named calls), driven by the official openai client's responses.create.
let server: ServeProcess;
let client: OpenAI;
const MODEL = "armature-tiny";

const weatherParameters = {
  type: "object",
  properties: { city: { type: "string", maxLength: 12 }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
  required: ["city", "unit"],
  additionalProperties: false,
};
const timeParameters = {
  type: "object",
  properties: { zone: { enum: ["UTC", "CET"] }, hours: { type: "integer" } },
  required: ["zone", "hours"],
};
const tools = [
  {
    type: "function" as const,
    name: "get_weather",
    description: "Weather in a city",
    parameters: weatherParameters,
    strict: true,
  },
  { type: "function" as const, name: "get_time", description: "Time in a zone", parameters: timeParameters, strict: null },
];
const ajv = new Ajv2020({ strict: false });
const validArguments = { get_weather: ajv.compile(weatherParameters), get_time: ajv.compile(timeParameters) };
const input = "What is the weather in Oslo?";

function assertValidCall(name: string, args: string): void {
  const validate = validArguments[name as keyof typeof validArguments];
  assert.ok(validate, `unknown tool ${name}`);
  assert.ok(validate(JSON.parse(args)), `${name}(${args}): ${JSON.stringify(validate.errors)}`);
}

function wire(response: OpenAI.Responses.Response): Record<string, unknown> {
  const { output_text: _, ...rest } = response as OpenAI.Responses.Response & { output_text?: string };
  return rest;
}

before(async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-e2e-"));
  server = await startServe(["--context-size", "1024"], { ARMATURE_CACHE_DIR: cacheDir });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

test("tool_choice required: the output is function_call items whose arguments fit the schema", async () => {
  // One call (parallel_tool_calls false), so the answer ends after it rather than at the budget.
  const response = await client.responses.create({
    model: MODEL,
    input,
    tools,
    tool_choice: "required",
    parallel_tool_calls: false,
    max_output_tokens: 200,
    temperature: 0,
  });
  assertMatchesResponsesSchema("Response", wire(response));
  assert.equal(response.status, "completed");
  assert.deepEqual(response.tools, tools);
  const calls = response.output.filter((item) => item.type === "function_call");
  assert.ok(calls.length >= 1);
  assert.equal(calls.length, response.output.length, "a required answer is calls only");
  for (const call of calls) {
    assert.match(call.call_id, /^call_[0-9a-f]{24}$/);
    assert.equal(call.id, call.call_id.replace("call_", "fc_"));
    assertValidCall(call.name, call.arguments);
  }
});

test("a named function is the one called, once with parallel_tool_calls false", async () => {
  const response = await client.responses.create({
    model: MODEL,
    input,
    tools,
    tool_choice: { type: "function", name: "get_time" },
    parallel_tool_calls: false,
    max_output_tokens: 200,
    temperature: 0,
  });
  assertMatchesResponsesSchema("Response", wire(response));
  const calls = response.output.filter((item) => item.type === "function_call");
  assert.deepEqual(
    calls.map((c) => c.name),
    ["get_time"],
  );
  assertValidCall("get_time", calls[0]?.arguments ?? "");
  assert.deepEqual(response.tool_choice, { type: "function", name: "get_time" });
});

test("a streamed call is output_item.added, argument deltas, arguments.done, output_item.done, in order", async () => {
  const ask = {
    model: MODEL,
    input,
    tools,
    tool_choice: "required" as const,
    parallel_tool_calls: false,
    max_output_tokens: 200,
    temperature: 0,
  };
  const stream = await client.responses.create({ ...ask, stream: true });
  const events: OpenAI.Responses.ResponseStreamEvent[] = [];
  for await (const event of stream) events.push(event);
  for (const event of events) assertMatchesResponsesSchema("ResponseStreamEvent", event);
  assert.deepEqual(
    events.map((e) => e.sequence_number),
    events.map((_, i) => i),
  );
  const types = events.map((e) => e.type);
  const deltas = types.filter((t) => t === "response.function_call_arguments.delta").length;
  assert.ok(deltas >= 1);
  assert.deepEqual(types, [
    "response.created",
    "response.in_progress",
    "response.output_item.added",
    ...Array<string>(deltas).fill("response.function_call_arguments.delta"),
    "response.function_call_arguments.done",
    "response.output_item.done",
    "response.completed",
  ]);
  const args = events.flatMap((e) => (e.type === "response.function_call_arguments.delta" ? [e.delta] : [])).join("");
  const done = events.find((e) => e.type === "response.function_call_arguments.done");
  assert.ok(done?.type === "response.function_call_arguments.done");
  assert.equal(done.arguments, args);
  assertValidCall(done.name, args);
  const final = (events.at(-1) as OpenAI.Responses.ResponseCompletedEvent).response.output;
  assert.equal(final.length, 1);
  assert.ok(final[0]?.type === "function_call" && final[0].arguments === args && final[0].name === done.name);
});

test("earlier calls and their outputs are the prompt a chat completion with tool_calls and tool messages has", async () => {
  const call = { name: "get_weather", arguments: '{"city":"Oslo","unit":"celsius"}' };
  const response = await client.responses.create({
    model: MODEL,
    tools,
    input: [
      { role: "user", content: input },
      { type: "function_call", call_id: "call_1", ...call },
      { type: "function_call_output", call_id: "call_1", output: "4 degrees" },
    ],
    max_output_tokens: 1,
  });
  const chat = await client.chat.completions.create({
    model: MODEL,
    tools: tools.map(({ name, description, parameters }) => ({
      type: "function" as const,
      function: { name, description, parameters },
    })),
    messages: [
      { role: "user", content: input },
      { role: "assistant", content: "", tool_calls: [{ id: "call_1", type: "function", function: call }] },
      { role: "tool", tool_call_id: "call_1", content: "4 degrees" },
    ],
    max_tokens: 1,
  });
  assert.equal(response.usage?.input_tokens, chat.usage?.prompt_tokens);
});

test("tools of other types, other tool_choice shapes and bad declarations are refused by name", async () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ tools: [{ type: "web_search" }] }, "tools[0].type"],
    [{ tools, tool_choice: { type: "allowed_tools", mode: "auto", tools: [] } }, "tool_choice"],
    [{ tools: [{ type: "function", name: "bad name!", parameters: {} }] }, "tools[0].name"],
    [{ tools: [{ ...tools[0], defer_loading: true }] }, "tools[0].defer_loading"],
    [{ tools, tool_choice: { type: "function", name: "nope" } }, "tool_choice"],
    [{ tool_choice: "required" }, "tool_choice"],
  ];
  for (const [extra, param] of cases) {
    const refused = await client.responses.create({ model: MODEL, input, ...extra } as never).catch((e: unknown) => e);
    assert.ok(refused instanceof BadRequestError, `${param}: ${String(refused)}`);
    assert.equal(refused.param, param);
  }
});
