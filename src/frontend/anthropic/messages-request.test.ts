import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { test } from "node:test";
import { checkFieldTable } from "../../../test/helpers/field-table.js";
import { isArmatureError } from "../../protocol/index.js";
import { countTokensFields, messagesFields, parseCountTokensRequest, parseMessagesRequest } from "./messages-request.js";

/** The body params of an interface in the Anthropic SDK's type declarations (its docs say "Body param"). */
function sdkBodyParams(name: string): string[] {
  const file = createRequire(import.meta.url).resolve("@anthropic-ai/sdk/resources/messages/messages");
  const source = readFileSync(file.replace(/\.js$/, ".d.ts"), "utf8");
  const body = source.split(`export interface ${name} {`)[1]?.split("\n}\n")[0] ?? "";
  return [...body.matchAll(/\/\*\*\s*\n\s*\* Body param[\s\S]*?\*\/\s*\n\s*(\w+)\??:/g)].map((m) => m[1] as string);
}

// Sampling fields Anthropic's API documents that the SDK's types (1.14) no longer list.
const sampling = ["temperature", "top_p", "top_k"];
const user = [{ role: "user", content: "hi" }];

checkFieldTable({
  name: "messages",
  fields: messagesFields,
  schema: "the Anthropic SDK's MessageCreateParams",
  reference: [...sdkBodyParams("MessageCreateParamsBase"), ...sampling],
  heading: "## `POST /v1/messages`",
  base: { model: "m", max_tokens: 4, messages: user },
  parse: parseMessagesRequest,
});

checkFieldTable({
  name: "count_tokens",
  fields: countTokensFields,
  schema: "the Anthropic SDK's MessageCountTokensParams",
  reference: sdkBodyParams("MessageCountTokensParams"),
  heading: "## `POST /v1/messages/count_tokens`",
  base: { model: "m", messages: user },
  parse: parseCountTokensRequest,
});

test("the SDK's body params are read from its types", () => {
  assert.ok(sdkBodyParams("MessageCreateParamsBase").includes("stop_sequences"));
  assert.ok(!sdkBodyParams("MessageCreateParamsBase").includes("workspace_id"), "a header param");
});

test("system text and text blocks become the chat template's messages", () => {
  const request = parseMessagesRequest({
    model: "m",
    max_tokens: 4,
    system: [
      { type: "text", text: "Be ", cache_control: { type: "ephemeral" } },
      { type: "text", text: "brief." },
    ],
    messages: [
      { role: "user", content: [{ type: "text", text: "Hello" }] },
      { role: "assistant", content: "Hi" },
      { role: "user", content: "Again" },
    ],
    stop_sequences: ["a", "b", "c", "d", "e"],
    temperature: 0.5,
    top_k: 3,
  });
  assert.deepEqual(request.messages, [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Hello" },
    { role: "assistant", content: "Hi" },
    { role: "user", content: "Again" },
  ]);
  assert.deepEqual(request.params.stop, ["a", "b", "c", "d", "e"]);
  assert.deepEqual([request.params.maxTokens, request.params.sampling.temperature, request.params.sampling.topK], [4, 0.5, 3]);
});

test("max_tokens is required and temperature is Anthropic's 0 to 1", () => {
  const refused = (body: Record<string, unknown>, param: string) =>
    assert.throws(
      () => parseMessagesRequest({ model: "m", messages: user, max_tokens: 4, ...body }),
      (e: unknown) => isArmatureError(e) && e.param === param,
      param,
    );
  refused({ max_tokens: undefined }, "max_tokens");
  refused({ max_tokens: 0 }, "max_tokens");
  refused({ temperature: 1.5 }, "temperature");
  refused({ stop_sequences: "END" }, "stop_sequences");
  refused({ messages: [{ role: "user", content: "x", name: "n" }] }, "messages[0].name");
  refused(
    { messages: [{ role: "user", content: [{ type: "image", source: { type: "url", url: "http://x/y.png" } }] }] },
    "messages[0].content[0].type",
  );
});

test("output_config.format becomes the engine's constraint, and its errors name Anthropic's field", () => {
  const schema = { type: "object", properties: { a: { type: "integer" } } };
  const withConfig = (output_config: unknown) =>
    parseMessagesRequest({ model: "m", max_tokens: 4, messages: user, output_config });
  assert.deepEqual(withConfig({ format: { type: "json_schema", schema } }).params.constraint, { type: "json_schema", schema });
  assert.equal(withConfig({ effort: null }).params.constraint, undefined);
  let deep: Record<string, unknown> = { type: "string" };
  for (let i = 0; i < 70; i++) deep = { type: "array", items: deep };
  for (const [config, param] of [
    [{ format: { type: "json_schema", schema: deep } }, "output_config.format.schema"],
    [{ format: { type: "json_object" } }, "output_config.format.type"],
    [{ effort: "high" }, "output_config.effort"],
  ] as const) {
    assert.throws(
      () => withConfig(config),
      (e: unknown) => isArmatureError(e) && e.param === param && !e.message.includes("response_format"),
      param,
    );
  }
});

test("client tools, tool_use and tool_result blocks become the chat machinery's tools, calls and tool messages", () => {
  const request = parseMessagesRequest({
    model: "m",
    max_tokens: 4,
    tools: [
      { name: "f", description: "d", input_schema: { type: "object", properties: {} }, cache_control: { type: "ephemeral" } },
    ],
    tool_choice: { type: "any", disable_parallel_tool_use: true },
    messages: [
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: [
          { type: "text", text: "Calling.", citations: null },
          { type: "tool_use", id: "toolu_1", name: "f", input: { a: 1 }, caller: { type: "direct" } },
        ],
      },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "one" }] },
          { type: "text", text: "Thanks" },
        ],
      },
    ],
  });
  assert.deepEqual(request.tools, {
    tools: [{ name: "f", description: "d", parameters: { type: "object", properties: {} } }],
    choice: { type: "required" },
    parallel: false,
  });
  assert.deepEqual(request.messages, [
    { role: "user", content: "hi" },
    {
      role: "assistant",
      content: "Calling.",
      toolCalls: [{ id: "toolu_1", type: "function", function: { name: "f", arguments: '{"a":1}' } }],
    },
    { role: "tool", content: "one", toolCallId: "toolu_1" },
    { role: "user", content: "Thanks" },
  ]);
  const named = parseMessagesRequest({
    model: "m",
    max_tokens: 4,
    messages: user,
    tools: [{ name: "f", input_schema: {} }],
    tool_choice: { type: "tool", name: "f" },
  });
  assert.deepEqual(named.tools?.choice, { type: "function", name: "f" });
});

test("tool errors name Anthropic's fields", () => {
  const refused = (body: Record<string, unknown>, param: string) =>
    assert.throws(
      () => parseMessagesRequest({ model: "m", max_tokens: 4, messages: user, ...body }),
      (e: unknown) => isArmatureError(e) && e.param === param && !e.message.includes(".function."),
      param,
    );
  refused({ tools: [{ name: "x y", input_schema: {} }] }, "tools[0].name");
  refused({ tools: [{ name: "f", input_schema: { type: "string" } }] }, "tools[0].input_schema");
  refused({ tools: [{ name: "f" }] }, "tools[0].input_schema");
  refused({ tools: [{ type: "web_search_20250305", name: "web_search" }] }, "tools[0].type");
  refused({ tools: [{ name: "f", input_schema: {} }], tool_choice: { type: "tool", name: "g" } }, "tool_choice");
  refused({ tools: [{ name: "f", input_schema: {} }], tool_choice: { type: "sometimes" } }, "tool_choice.type");
  refused(
    { messages: [{ role: "user", content: [{ type: "tool_use", id: "t", name: "f", input: {} }] }] },
    "messages[0].content[0].type",
  );
  refused(
    { messages: [{ role: "user", content: [{ type: "tool_result", content: "x" }] }] },
    "messages[0].content[0].tool_use_id",
  );
});
