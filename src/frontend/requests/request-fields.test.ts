import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { isArmatureError } from "../../protocol/index.js";
import { parseCompletionRequest } from "../openai/completion-request.js";
import { parseChatRequest } from "./chat-request.js";
import { parseEmbeddingsRequest } from "./embeddings-request.js";
import {
  chatFields,
  completionFields,
  detokenizeFields,
  embeddingsFields,
  type FieldRule,
  tokenizeFields,
} from "./request-fields.js";
import { parseDetokenizeRequest, parseTokenizeRequest } from "./tokenize-request.js";

const spec = JSON.parse(
  readFileSync(new URL("../../../test/fixtures/openai/openai-inference-subset.openapi.json", import.meta.url), "utf8"),
);
const docs = readFileSync(new URL("../../../docs/api.md", import.meta.url), "utf8");

/** Every property a request schema of the OpenAI spec declares, through $ref and allOf/anyOf/oneOf. */
function specFields(name: string): string[] {
  const seen = new Set<string>();
  const walk = (schema: Record<string, unknown> | undefined): void => {
    if (!schema) return;
    if (typeof schema.$ref === "string") {
      walk(spec.components.schemas[schema.$ref.split("/").pop() as string]);
      return;
    }
    for (const key of ["allOf", "anyOf", "oneOf"])
      for (const part of (schema[key] as Record<string, unknown>[]) ?? []) walk(part);
    for (const field of Object.keys((schema.properties as object) ?? {})) seen.add(field);
  };
  walk(spec.components.schemas[name]);
  return [...seen];
}

/** The rows of the docs/api.md table under `heading`: field → status. */
function documented(heading: string): Map<string, string> {
  const section = docs.split(heading)[1]?.split("\n## ")[0] ?? "";
  return new Map([...section.matchAll(/^\| `([a-z_]+)` \| (\w+) \|/gm)].map((m) => [m[1] as string, m[2] as string]));
}

const routes = [
  {
    name: "chat",
    fields: chatFields,
    schema: "OpenAI's CreateChatCompletionRequest",
    reference: specFields("CreateChatCompletionRequest"),
    heading: "## `POST /v1/chat/completions`",
    base: { model: "m", messages: [{ role: "user", content: "hi" }] },
    parse: parseChatRequest,
  },
  {
    name: "completions",
    fields: completionFields,
    schema: "OpenAI's CreateCompletionRequest",
    reference: specFields("CreateCompletionRequest"),
    heading: "## `POST /v1/completions`",
    base: { model: "m", prompt: "hi" },
    parse: parseCompletionRequest,
  },
  {
    name: "embeddings",
    fields: embeddingsFields,
    schema: "OpenAI's CreateEmbeddingRequest",
    reference: specFields("CreateEmbeddingRequest"),
    heading: "## `POST /v1/embeddings`",
    base: { model: "m", input: "hi" },
    parse: parseEmbeddingsRequest,
  },
  // vLLM's fields, from vllm/entrypoints/serve/tokenize/protocol.py (TokenizeCompletionRequest,
  // TokenizeChatRequest, DetokenizeRequest).
  {
    name: "tokenize",
    fields: tokenizeFields,
    schema: "vLLM's TokenizeCompletionRequest and TokenizeChatRequest",
    reference: [
      "model",
      "prompt",
      "add_special_tokens",
      "return_token_strs",
      "messages",
      "add_generation_prompt",
      "continue_final_message",
      "chat_template",
      "chat_template_kwargs",
      "media_io_kwargs",
      "mm_processor_kwargs",
      "tools",
    ],
    heading: "## `POST /tokenize`",
    base: { model: "m", prompt: "hi" },
    parse: parseTokenizeRequest,
  },
  {
    name: "detokenize",
    fields: detokenizeFields,
    schema: "vLLM's DetokenizeRequest",
    reference: ["model", "tokens"],
    heading: "## `POST /detokenize`",
    base: { model: "m", tokens: [1, 2] },
    parse: parseDetokenizeRequest,
  },
] as const;

for (const route of routes) {
  test(`${route.name}: every field of ${route.schema} has a rule`, () => {
    const missing = route.reference.filter((f) => !Object.hasOwn(route.fields, f));
    assert.deepEqual(missing, []);
  });

  test(`${route.name}: docs/api.md says what the code does, field by field`, () => {
    const rows = documented(route.heading);
    const code = new Map(Object.entries(route.fields as Record<string, FieldRule>).map(([f, r]) => [f, r.status as string]));
    assert.deepEqual(new Map([...rows].sort()), new Map([...code].sort()));
  });

  test(`${route.name}: each refused field is refused by name, and its no-op value is taken`, () => {
    for (const [field, rule] of Object.entries(route.fields as Record<string, FieldRule>)) {
      if (rule.status !== "refused") continue;
      const asking = [true, 5, "x", [{ type: "function" }], { a: 1 }].find((v) => !rule.noOp(v));
      assert.throws(
        () => route.parse({ ...route.base, [field]: asking }),
        (e: unknown) => isArmatureError(e) && e.code === "NOT_SUPPORTED" && e.param === field,
        field,
      );
      const noOp = [null, false, 0, 1, [], {}, "", "none", "auto", ["text"]].find((v) => rule.noOp(v));
      assert.doesNotThrow(() => route.parse({ ...route.base, [field]: noOp }), `${field}: ${JSON.stringify(noOp)}`);
    }
  });

  test(`${route.name}: a field in no table is refused as OpenAI refuses it`, () => {
    // Regression: min_tokens (and any unknown field) was silently ignored; min_tokens is served now.
    for (const field of ["max_new_tokens", "temprature", "__proto__x"]) {
      assert.throws(
        () => route.parse({ ...route.base, [field]: 1 }),
        (e: unknown) =>
          isArmatureError(e) &&
          e.code === "REQUEST_INVALID" &&
          e.param === field &&
          e.message === `Unrecognized request argument supplied: ${field}`,
      );
    }
  });
}

test("a chat message's fields the template would lose are refused by name", () => {
  // Regression: tool_call_id and an assistant's tool_calls were dropped from the conversation; they
  // now reach the template, and fields it would still lose are refused.
  const call = { id: "c1", type: "function", function: { name: "f", arguments: "{}" } };
  for (const [message, param] of [
    [{ role: "user", content: "hi", name: "ann" }, "messages[0].name"],
    [{ role: "user", content: "hi", tool_calls: [call] }, "messages[0].tool_calls"],
    [{ role: "user", content: "hi", tool_call_id: "c1" }, "messages[0].tool_call_id"],
  ] as const) {
    assert.throws(
      () => parseChatRequest({ model: "m", messages: [message] }),
      (e: unknown) => isArmatureError(e) && e.param === param,
      param,
    );
  }
  const parsed = parseChatRequest({
    model: "m",
    messages: [
      { role: "user", content: "hi", name: null, tool_calls: [] },
      { role: "assistant", content: null, tool_calls: [call] },
      { role: "tool", content: "42", tool_call_id: "c1" },
    ],
  });
  assert.deepEqual(parsed.messages.slice(1), [
    { role: "assistant", content: "", toolCalls: [call] },
    { role: "tool", content: "42", toolCallId: "c1" },
  ]);
});
