import assert from "node:assert/strict";
import { test } from "node:test";
import { isArmatureError, type ModelCard } from "../../protocol/index.js";
import { ConstrainedCallStream } from "./constrained-stream.js";
import { reassemble } from "./test-helpers.js";
import { answerWithToolCalls, planToolCalls, toolCallStream } from "./tool-plan.js";
import { parseToolRequest } from "./tool-request.js";

const weather = {
  type: "function",
  function: { name: "get_weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } },
};
const time = { type: "function", function: { name: "get_time" } };
const card = (engine: string, chatTemplate?: string): ModelCard => ({ name: "m", engine, chatTemplate }) as unknown as ModelCard;

test("tool_choice required: any of the tools' shapes (their names keep them apart), an array when parallel calls are allowed", () => {
  const plan = planToolCalls(parseToolRequest({ tools: [weather, time], tool_choice: "required" }), card("llamacpp"), undefined);
  assert.equal(plan.mode, "constrained");
  const schema = plan.mode === "constrained" && plan.constraint.type === "json_schema" ? plan.constraint.schema : undefined;
  assert.deepEqual(schema, {
    type: "array",
    minItems: 1,
    items: {
      anyOf: [
        {
          type: "object",
          properties: { name: { const: "get_weather" }, arguments: weather.function.parameters },
          required: ["name", "arguments"],
        },
        {
          type: "object",
          properties: { name: { const: "get_time" }, arguments: { type: "object", properties: {} } },
          required: ["name", "arguments"],
        },
      ],
    },
  });
});

test("a named function: that function's shape alone, whatever parallel_tool_calls says", () => {
  const plan = planToolCalls(
    parseToolRequest({ tools: [weather, time], tool_choice: { type: "function", function: { name: "get_time" } } }),
    card("llamacpp"),
    undefined,
  );
  assert.deepEqual(plan.mode === "constrained" ? plan.constraint : undefined, {
    type: "json_schema",
    schema: {
      type: "object",
      properties: { name: { const: "get_time" }, arguments: { type: "object", properties: {} } },
      required: ["name", "arguments"],
    },
  });
});

test("the mocker refuses required and named tool_choice by name, and serves auto and none", () => {
  for (const tool_choice of ["required", { type: "function", function: { name: "get_time" } }]) {
    assert.throws(
      () => planToolCalls(parseToolRequest({ tools: [time], tool_choice }), card("mocker"), undefined),
      (e: unknown) => isArmatureError(e) && e.code === "NOT_SUPPORTED" && e.param === "tool_choice",
    );
  }
  assert.equal(planToolCalls(parseToolRequest({ tools: [time], tool_choice: "none" }), card("mocker"), "hermes").mode, "text");
  assert.equal(planToolCalls(parseToolRequest({ tools: [time] }), card("mocker"), "hermes").mode, "parse");
});

test("auto: the flag's parser, else the template's, else plain text", () => {
  const tools = parseToolRequest({ tools: [time] });
  const parse = (p: ReturnType<typeof planToolCalls>) => (p.mode === "parse" ? p.parser.name : p.mode);
  assert.equal(parse(planToolCalls(tools, card("llamacpp", "<tool_call>"), "pythonic")), "pythonic");
  assert.equal(parse(planToolCalls(tools, card("llamacpp", "{{ '<tool_call>' }}"), undefined)), "hermes");
  assert.equal(parse(planToolCalls(tools, card("llamacpp", "[TOOL_CALLS]"), undefined)), "mistral");
  assert.equal(parse(planToolCalls(tools, card("llamacpp", "plain"), undefined)), "text");
});

test("a constrained answer becomes tool calls with call_ ids and null content; a cut one stays text", () => {
  const plan = planToolCalls(parseToolRequest({ tools: [weather], tool_choice: "required" }), card("llamacpp"), undefined);
  const answer = answerWithToolCalls(plan, '[{"name": "get_weather", "arguments": {"city": "Oslo"}}]');
  assert.equal(answer.content, null);
  assert.equal(answer.toolCalls.length, 1);
  assert.match(answer.toolCalls[0]?.id ?? "", /^call_/);
  assert.deepEqual(answer.toolCalls[0]?.function, { name: "get_weather", arguments: '{"city":"Oslo"}' });
  assert.deepEqual(answerWithToolCalls(plan, '[{"name": "get_weather", "argu'), {
    content: '[{"name": "get_weather", "argu',
    toolCalls: [],
  });
});

for (const size of [1, 4, 16]) {
  test(`a constrained answer streams name first, then arguments in pieces (${size} characters a piece)`, () => {
    const text = '[ {"name": "get_weather", "arguments": {"city": "Oslo, \\"N\\"}"}} ,{ "name":"get_time","arguments":{}}]';
    const out = reassemble(new ConstrainedCallStream(), text, size);
    assert.equal(out.content, "");
    assert.deepEqual(
      out.calls.map((c) => [c.name, c.arguments]),
      [
        ["get_weather", { city: 'Oslo, "N"}' }],
        ["get_time", {}],
      ],
    );
  });
}

test("a single constrained call (no array) streams too", () => {
  const out = reassemble(new ConstrainedCallStream(), '{"name":"get_time","arguments":{"zone":"UTC"}}\n', 3);
  assert.deepEqual(
    out.calls.map((c) => [c.name, c.arguments]),
    [["get_time", { zone: "UTC" }]],
  );
});

test("tools are validated with 400s naming the bad field", () => {
  const bad: [Record<string, unknown>, string][] = [
    [{ tools: {} }, "tools"],
    [{ tools: [{ type: "custom", custom: { name: "x" } }] }, "tools[0].type"],
    [{ tools: [{ type: "function" }] }, "tools[0].function"],
    [{ tools: [{ type: "function", function: { name: "has space" } }] }, "tools[0].function.name"],
    [{ tools: [time, time] }, "tools[1].function.name"],
    [{ tools: [{ type: "function", function: { name: "f", parameters: { type: "string" } } }] }, "tools[0].function.parameters"],
    [
      { tools: [{ type: "function", function: { name: "f", parameters: { type: "object", required: "x" } } }] },
      "tools[0].function.parameters.required",
    ],
    [{ tools: [{ type: "function", function: { name: "f", description: 5 } }] }, "tools[0].function.description"],
    [{ tools: [time], tool_choice: "sometimes" }, "tool_choice"],
    [{ tools: [time], tool_choice: { type: "function", function: { name: "nope" } } }, "tool_choice"],
    [{ tools: [time], tool_choice: { type: "allowed_tools", allowed_tools: {} } }, "tool_choice"],
    [{ tool_choice: "required" }, "tool_choice"],
    [{ tools: [time], parallel_tool_calls: "yes" }, "parallel_tool_calls"],
  ];
  for (const [body, param] of bad) {
    assert.throws(
      () => parseToolRequest(body),
      (e: unknown) => isArmatureError(e) && e.param === param,
      JSON.stringify(body),
    );
  }
  assert.equal(parseToolRequest({ tools: [], tool_choice: "none" }), undefined);
  assert.deepEqual(parseToolRequest({ tools: [time], parallel_tool_calls: false })?.choice, { type: "auto" });
});

test("auto without parallel_tool_calls keeps the first call the parser finds, whole and streamed", () => {
  const text =
    '<tool_call>{"name": "get_time", "arguments": {}}</tool_call><tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>';
  const one = planToolCalls(
    parseToolRequest({ tools: [weather, time], parallel_tool_calls: false }),
    card("llamacpp", "<tool_call>"),
    undefined,
  );
  assert.deepEqual(
    answerWithToolCalls(one, text).toolCalls.map((c) => c.function.name),
    ["get_time"],
  );
  const stream = toolCallStream(one);
  assert.ok(stream);
  assert.deepEqual(
    reassemble(stream, text, 5).calls.map((c) => c.name),
    ["get_time"],
  );
  const all = planToolCalls(parseToolRequest({ tools: [weather, time] }), card("llamacpp", "<tool_call>"), undefined);
  assert.deepEqual(
    answerWithToolCalls(all, text).toolCalls.map((c) => c.function.name),
    ["get_time", "get_weather"],
  );
});
