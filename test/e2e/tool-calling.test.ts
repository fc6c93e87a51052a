import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { ChatOpenAI } from "@langchain/openai";
import { generateText, jsonSchema, tool } from "ai";
import { Ajv2020 } from "ajv/dist/2020.js";
import OpenAI from "openai";
import { resolveServeOptions } from "../../src/cli/serve-options.js";
import { isArmatureError } from "../../src/protocol/index.js";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { assertMatchesSchema, sseData } from "../helpers/openai-spec.js";

// Tool calling on `armature serve` with the generated tiny llama.cpp model, driven by the official
// clients (openai, Vercel AI SDK, LangChain); responses and chunks are checked against OpenAI's
// spec and the calls' arguments against the declared JSON schemas. `required` and named calls are
// enforced by a grammar, so even this model answers with a valid call.
let server: ServeProcess;
let mocker: ServeProcess;
let client: OpenAI;
const MODEL = "armature-tiny";

const weatherParameters = {
  type: "object",
  properties: {
    city: { type: "string", maxLength: 12 },
    unit: { type: "string", enum: ["celsius", "fahrenheit"] },
  },
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
    function: { name: "get_weather", description: "Weather in a city", parameters: weatherParameters },
  },
  { type: "function" as const, function: { name: "get_time", description: "Time in a zone", parameters: timeParameters } },
];
const ajv = new Ajv2020({ strict: false });
const validArguments = { get_weather: ajv.compile(weatherParameters), get_time: ajv.compile(timeParameters) };
const messages = [{ role: "user" as const, content: "What is the weather in Oslo?" }];

/** Whether `name` is a declared tool and `args` (a JSON string) satisfies its parameters' schema. */
function assertValidCall(name: string, args: string): void {
  const validate = validArguments[name as keyof typeof validArguments];
  assert.ok(validate, `unknown tool ${name}`);
  assert.ok(validate(JSON.parse(args)), `${name}(${args}): ${JSON.stringify(validate.errors)}`);
}

before(async () => {
  const cacheDir = await mkdtemp(join(tmpdir(), "armature-tools-"));
  [server, mocker] = await Promise.all([
    startServe(["--context-size", "1024"], { ARMATURE_CACHE_DIR: cacheDir }),
    startServe(["--engine", "mocker", "--speedup-ratio", "100"]),
  ]);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
  assert.equal(await mocker.stop("SIGTERM"), 0, mocker.output());
});

test("tool_choice required: the answer is a valid call, finish_reason tool_calls, content null", async () => {
  const data = await client.chat.completions.create({
    model: MODEL,
    messages,
    tools,
    tool_choice: "required",
    max_tokens: 200,
    seed: 3,
  });
  assertMatchesSchema("CreateChatCompletionResponse", data);
  const choice = data.choices[0];
  assert.equal(choice?.finish_reason, "tool_calls");
  assert.equal(choice?.message.content, null);
  const calls = choice?.message.tool_calls ?? [];
  assert.ok(calls.length >= 1);
  for (const call of calls) {
    assert.equal(call.type, "function");
    assert.match(call.id, /^call_[0-9a-f]{24}$/);
    if (call.type === "function") assertValidCall(call.function.name, call.function.arguments);
  }
});

test("parallel_tool_calls false: exactly one call", async () => {
  const result = await client.chat.completions.create({
    model: MODEL,
    messages,
    tools,
    tool_choice: "required",
    parallel_tool_calls: false,
    max_tokens: 200,
    temperature: 0,
  });
  const calls = result.choices[0]?.message.tool_calls ?? [];
  assert.equal(calls.length, 1);
  const call = calls[0];
  if (call?.type === "function") assertValidCall(call.function.name, call.function.arguments);
});

test("a named function is the one called, for several seeds", async () => {
  for (const seed of [1, 2, 3]) {
    const result = await client.chat.completions.create({
      model: MODEL,
      messages,
      tools,
      tool_choice: { type: "function", function: { name: "get_time" } },
      max_tokens: 200,
      seed,
    });
    assert.equal(result.choices[0]?.finish_reason, "tool_calls");
    const calls = result.choices[0]?.message.tool_calls ?? [];
    assert.equal(calls.length, 1);
    const call = calls[0];
    assert.equal(call?.type === "function" ? call.function.name : undefined, "get_time");
    if (call?.type === "function") assertValidCall(call.function.name, call.function.arguments);
  }
});

test("streamed tool calls: id and name first, arguments in pieces, finish tool_calls; chunks conform", async () => {
  const res = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: MODEL,
      messages,
      tools,
      tool_choice: { type: "function", function: { name: "get_weather" } },
      max_tokens: 200,
      stream: true,
    }),
  });
  assert.equal(res.status, 200);
  const events = sseData(await res.text());
  assert.equal(events.at(-1), "[DONE]");
  const chunks = events
    .slice(0, -1)
    .map((e) => JSON.parse(e) as { choices: { delta: Record<string, unknown>; finish_reason: string | null }[] });
  for (const c of chunks) assertMatchesSchema("CreateChatCompletionStreamResponse", c);
  const pieces = chunks.flatMap((c) => (c.choices[0]?.delta.tool_calls as Record<string, unknown>[] | undefined) ?? []);
  const first = pieces[0] as { index: number; id: string; type: string; function: { name: string; arguments: string } };
  assert.equal(first.index, 0);
  assert.match(first.id, /^call_/);
  assert.equal(first.type, "function");
  assert.deepEqual(first.function, { name: "get_weather", arguments: "" });
  const rest = pieces.slice(1) as { index: number; id?: string; function: { name?: string; arguments: string } }[];
  assert.ok(rest.length >= 2, "the arguments come in pieces");
  for (const piece of rest) {
    assert.equal(piece.index, 0);
    assert.equal(piece.id, undefined);
    assert.equal(piece.function.name, undefined);
  }
  assertValidCall("get_weather", rest.map((p) => p.function.arguments).join(""));
  assert.deepEqual(
    chunks.map((c) => c.choices[0]?.finish_reason).filter((f) => f),
    ["tool_calls"],
  );
  assert.ok(
    chunks.every((c) => !c.choices[0]?.delta.content),
    "no content beside the call",
  );
});

test("the openai client's stream helper reassembles streamed calls", async () => {
  const stream = client.chat.completions.stream({
    model: MODEL,
    messages,
    tools,
    tool_choice: "required",
    max_tokens: 300,
    seed: 5,
  });
  const final = await stream.finalChatCompletion();
  const choice = final.choices[0];
  assert.equal(choice?.finish_reason, "tool_calls");
  const calls = choice?.message.tool_calls ?? [];
  assert.ok(calls.length >= 1);
  for (const call of calls) if (call.type === "function") assertValidCall(call.function.name, call.function.arguments);
});

test("tool_choice auto: the hermes parser (from the template) reads the answer; text without a call is content", async () => {
  // The tiny model does not choose to call tools by itself; the parsers' unit tests carry the
  // calls it would write (golden outputs of real models).
  const result = await client.chat.completions.create({ model: MODEL, messages, tools, max_tokens: 16, temperature: 0 });
  const choice = result.choices[0];
  assert.equal(choice?.message.tool_calls, undefined);
  assert.equal(typeof choice?.message.content, "string");
  assert.ok(["stop", "length"].includes(choice?.finish_reason ?? ""));
  const streamed = await client.chat.completions.create({
    model: MODEL,
    messages,
    tools,
    max_tokens: 16,
    temperature: 0,
    stream: true,
  });
  let text = "";
  for await (const chunk of streamed) text += chunk.choices[0]?.delta.content ?? "";
  assert.equal(text, choice?.message.content);
});

test("Vercel AI SDK generateText with a required tool gets a call with schema-valid input", async () => {
  const provider = createOpenAICompatible({ name: "armature", baseURL: `${server.url}/v1` });
  const result = await generateText({
    model: provider(MODEL),
    prompt: "What is the weather in Oslo?",
    tools: { get_weather: tool({ description: "Weather in a city", inputSchema: jsonSchema(weatherParameters) }) },
    toolChoice: "required",
    maxOutputTokens: 200,
  });
  assert.equal(result.finishReason, "tool-calls");
  assert.equal(result.toolCalls.length >= 1, true);
  const call = result.toolCalls[0];
  assert.equal(call?.toolName, "get_weather");
  assertValidCall("get_weather", JSON.stringify(call?.input));
});

test("LangChain ChatOpenAI.bindTools with tool_choice required and parallel_tool_calls false returns one tool call", async () => {
  const model = new ChatOpenAI({
    model: MODEL,
    apiKey: "unused",
    maxTokens: 200,
    configuration: { baseURL: `${server.url}/v1` },
  });
  const bound = model.bindTools(
    [{ type: "function", function: { name: "get_time", description: "Time in a zone", parameters: timeParameters } }],
    // Parallel calls (the default) allow several under "required" (docs/api.md); false asks for exactly one.
    { tool_choice: "required", parallel_tool_calls: false },
  );
  const reply = await bound.invoke("What time is it?");
  assert.equal(reply.tool_calls?.length, 1);
  assert.equal(reply.tool_calls?.[0]?.name, "get_time");
  assertValidCall("get_time", JSON.stringify(reply.tool_calls?.[0]?.args));
});

test("a conversation with a call and its result reaches the template intact, and is answered", async () => {
  const conversation = [
    { role: "user", content: "What is the weather in Oslo?" },
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "call_1", type: "function", function: { name: "get_weather", arguments: '{"city":"Oslo","unit":"celsius"}' } },
      ],
    },
    { role: "tool", tool_call_id: "call_1", content: "12 degrees and rain" },
  ];
  const post = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    assert.equal(res.status, 200, await res.clone().text());
    return (await res.json()) as Record<string, unknown>;
  };
  // The Hermes rendering, written out by hand from the template's rules: the conversation's prompt
  // tokens are those of this text (its special tokens included).
  const rendered = await post("/tokenize", { model: MODEL, messages: conversation });
  const expected = await post("/tokenize", {
    model: MODEL,
    prompt:
      "<|im_start|>user\nWhat is the weather in Oslo?<|im_end|>\n" +
      '<|im_start|>assistant\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius"}}\n</tool_call><|im_end|>\n' +
      "<|im_start|>user\n<tool_response>\n12 degrees and rain\n</tool_response><|im_end|>\n" +
      "<|im_start|>assistant\n",
  });
  assert.deepEqual(rendered.tokens, expected.tokens);
  const { prompt } = await post("/detokenize", { model: MODEL, tokens: rendered.tokens });
  assert.match(String(prompt), /<tool_response>\n12 degrees and rain\n<\/tool_response>/);
  const answer = (await client.chat.completions.create({
    model: MODEL,
    messages: conversation as OpenAI.ChatCompletionMessageParam[],
    tools,
    max_tokens: 8,
  })) as OpenAI.ChatCompletion;
  assert.equal(answer.choices[0]?.message.role, "assistant");
});

test("declared tools reach the template: /tokenize renders them the Hermes way, as a chat completion does", async () => {
  const body = {
    model: MODEL,
    messages: [{ role: "user", content: "Time?" }],
    tools: [
      { type: "function", function: { name: "get_time", description: "Time", parameters: { type: "object", properties: {} } } },
    ],
  };
  const tokenize = async (payload: unknown): Promise<number[]> => {
    const res = await fetch(`${server.url}/tokenize`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(payload),
    });
    assert.equal(res.status, 200);
    return ((await res.json()) as { tokens: number[] }).tokens;
  };
  // Written out by hand from the template's rules (Qwen 2.5's wording, JSON as Jinja's tojson writes it).
  const expected =
    "<|im_start|>system\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n" +
    '{"type": "function", "function": {"name": "get_time", "description": "Time", "parameters": {"type": "object", "properties": {}}}}\n' +
    "</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n" +
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' +
    "<|im_start|>user\nTime?<|im_end|>\n<|im_start|>assistant\n";
  const tokens = await tokenize(body);
  assert.deepEqual(tokens, await tokenize({ model: MODEL, prompt: expected }));
  const completion = await client.chat.completions.create({
    ...body,
    max_tokens: 1,
  } as OpenAI.ChatCompletionCreateParamsNonStreaming);
  assert.equal(completion.usage?.prompt_tokens, tokens.length);
});

/** Posts a chat request and returns the status and error body. */
async function refusal(url: string, body: Record<string, unknown>): Promise<{ status: number; param: unknown; code: unknown }> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ messages, max_tokens: 4, ...body }),
  });
  const json = (await res.json()) as { error: { param: unknown; code: unknown } };
  assertMatchesSchema("ErrorResponse", json);
  return { status: res.status, param: json.error.param, code: json.error.code };
}

test("the mocker refuses tool_choice required and named, naming tool_choice; it serves auto", async () => {
  const model = "armature-mocker";
  for (const tool_choice of ["required", { type: "function", function: { name: "get_time" } }]) {
    const got = await refusal(mocker.url, { model, tools, tool_choice });
    assert.deepEqual([got.status, got.param], [400, "tool_choice"], JSON.stringify(tool_choice));
  }
  const res = await fetch(`${mocker.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model, messages, tools, tool_choice: "auto", max_tokens: 4 }),
  });
  assert.equal(res.status, 200);
});

test("each refused tool variant is a 400 naming its field", async () => {
  const cases: [string, Record<string, unknown>, string][] = [
    [
      "tool_choice with response_format",
      { tools, tool_choice: "required", response_format: { type: "json_object" } },
      "tool_choice",
    ],
    ["an unknown named function", { tools, tool_choice: { type: "function", function: { name: "nope" } } }, "tool_choice"],
    ["required without tools", { tool_choice: "required" }, "tool_choice"],
    [
      "allowed_tools",
      { tools, tool_choice: { type: "allowed_tools", allowed_tools: { mode: "auto", tools: [] } } },
      "tool_choice",
    ],
    ["a custom tool", { tools: [{ type: "custom", custom: { name: "x" } }] }, "tools[0].type"],
    ["a bad function name", { tools: [{ type: "function", function: { name: "get weather" } }] }, "tools[0].function.name"],
    [
      "parameters that are no object schema",
      { tools: [{ type: "function", function: { name: "f", parameters: { type: "array" } } }] },
      "tools[0].function.parameters",
    ],
    ["the deprecated functions", { functions: [{ name: "f" }] }, "functions"],
    ["the deprecated function_call", { function_call: "auto" }, "function_call"],
    [
      "a call without arguments in the conversation",
      { messages: [{ role: "assistant", content: null, tool_calls: [{ id: "c", type: "function", function: { name: "f" } }] }] },
      "messages[0].tool_calls[0].function.arguments",
    ],
  ];
  for (const [what, body, param] of cases) {
    const got = await refusal(server.url, { model: MODEL, ...body });
    assert.deepEqual([got.status, got.param], [400, param], what);
  }
});

test("--tool-call-parser takes the four parsers, by flag or ARMATURE_TOOL_CALL_PARSER, and refuses others naming the flag", () => {
  assert.equal(resolveServeOptions([], {}).toolCallParser, undefined);
  for (const name of ["hermes", "llama3_json", "mistral", "pythonic"]) {
    assert.equal(resolveServeOptions(["--tool-call-parser", name], {}).toolCallParser, name);
  }
  assert.equal(resolveServeOptions([], { ARMATURE_TOOL_CALL_PARSER: "mistral" }).toolCallParser, "mistral");
  assert.throws(
    () => resolveServeOptions(["--tool-call-parser", "granite"], {}),
    (e: unknown) => isArmatureError(e) && e.code === "CONFIG_INVALID" && e.message.includes("--tool-call-parser"),
  );
});
