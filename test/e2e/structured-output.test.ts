import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import OpenAI from "openai";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";

// Structured output through `armature serve` with the default model, as a new user tries it: every
// output under a schema is judged by a real validator (ajv, 2020-12, ajv-formats), at several
// seeds and temperatures; what cannot be enforced is refused with 400 naming keyword and pointer.

let server: ServeProcess;
let client: OpenAI;
const MODEL = "armature-tiny";
const ajv = new Ajv2020({ strict: false });
(addFormats as unknown as (a: Ajv2020) => void)(ajv);

before(async () => {
  server = await startServe(["--context-size", "1024"], { ARMATURE_CACHE_DIR: await mkdtemp(join(tmpdir(), "armature-e2e-")) });
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
});
after(async () => {
  assert.equal(await server.stop("SIGTERM"), 0, server.output());
});

const SAMPLINGS = [
  { temperature: 0 },
  { temperature: 0.7, seed: 1 },
  { temperature: 1, seed: 2 },
  { temperature: 1, seed: 3 },
  { temperature: 1.3, seed: 4 },
  { temperature: 1.5, seed: 5 },
];

test("a tool's bounded integer: every call's arguments fit the schema (they once came back 36, 10, 2100000)", async () => {
  const parameters = {
    type: "object",
    properties: { city: { type: "string", maxLength: 20 }, days: { type: "integer", minimum: 1, maximum: 7 } },
    required: ["city", "days"],
    additionalProperties: false,
  };
  const validate = ajv.compile(parameters);
  for (const sampling of SAMPLINGS) {
    const response = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Forecast for Oslo for the next days?" }],
      tools: [{ type: "function", function: { name: "forecast", parameters } }],
      tool_choice: "required",
      parallel_tool_calls: false,
      max_tokens: 120,
      ...sampling,
    });
    const call = response.choices[0]?.message.tool_calls?.[0];
    assert.ok(call?.type === "function", `${JSON.stringify(sampling)}: ${JSON.stringify(response.choices[0]?.message)}`);
    const args = JSON.parse(call.function.arguments) as unknown;
    assert.ok(validate(args), `${JSON.stringify(sampling)}: ${call.function.arguments} ${JSON.stringify(validate.errors)}`);
  }
});

test("response_format json_schema: bounds, a pattern with a length and a format hold at every sampling", async () => {
  const schema = {
    type: "object",
    properties: {
      n: { type: "integer", minimum: 1, maximum: 7 },
      s: { type: "string", pattern: "^[a-z]+$", maxLength: 5 },
      when: { type: "string", format: "date" },
      score: { type: "number", minimum: 0, maximum: 1 },
      tags: { type: "array", items: { enum: ["a", "b", "c"] }, minItems: 1, maxItems: 3 },
    },
    required: ["n", "s", "when", "score", "tags"],
    additionalProperties: false,
  };
  const validate = ajv.compile(schema);
  for (const sampling of SAMPLINGS) {
    const response = await client.chat.completions.create({
      model: MODEL,
      messages: [{ role: "user", content: "Give me a record." }],
      response_format: { type: "json_schema", json_schema: { name: "record", strict: true, schema } },
      max_tokens: 200,
      ...sampling,
    });
    const text = response.choices[0]?.message.content ?? "";
    assert.equal(response.choices[0]?.finish_reason, "stop", `${JSON.stringify(sampling)}: cut short: ${text}`);
    assert.ok(validate(JSON.parse(text)), `${JSON.stringify(sampling)}: ${text} ${JSON.stringify(validate.errors)}`);
  }
});

/** One schema per keyword the compiler enforces (docs/structured-output.md's table), its strings bounded so answers end. */
const KEYWORD_SCHEMAS: Record<string, Record<string, unknown>> = {
  type: { type: ["integer", "boolean"] },
  enum: { enum: ["red", 7, null, { a: 1 }] },
  const: { const: { ok: true } },
  "properties, required": {
    type: "object",
    properties: { a: { type: "boolean" }, b: { type: "integer", minimum: 0, maximum: 9 } },
    required: ["a"],
  },
  "additionalProperties false": {
    type: "object",
    properties: { k: { type: "string", maxLength: 4 } },
    required: ["k"],
    additionalProperties: false,
  },
  "additionalProperties schema (a map)": {
    type: "object",
    additionalProperties: { type: "integer", minimum: 0, maximum: 3 },
    maxProperties: 2,
  },
  patternProperties: { type: "object", properties: { x: { type: "boolean" } }, patternProperties: { "^z": { type: "integer" } } },
  "items, minItems, maxItems": { type: "array", items: { type: "boolean" }, minItems: 2, maxItems: 3 },
  prefixItems: { type: "array", prefixItems: [{ type: "integer", minimum: 1, maximum: 2 }, { const: "x" }], items: false },
  "minLength, maxLength": { type: "string", minLength: 2, maxLength: 4 },
  pattern: { type: "string", pattern: "^[A-F]{2}-[0-9]{3}$" },
  "format date-time": { type: "string", format: "date-time" },
  "format uuid": { type: "string", format: "uuid" },
  "format email": { type: "string", format: "email" },
  "format ipv4": { type: "string", format: "ipv4" },
  "minimum, maximum (integer)": { type: "integer", minimum: -12, maximum: 345 },
  "exclusiveMinimum, exclusiveMaximum (number)": { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 2 },
  anyOf: {
    anyOf: [
      { type: "integer", minimum: 5, maximum: 6 },
      { type: "string", maxLength: 2 },
    ],
  },
  "oneOf (disjoint)": { oneOf: [{ type: "boolean" }, { type: "null" }] },
  allOf: { allOf: [{ type: "integer" }, { minimum: 3 }, { maximum: 4 }] },
  "$ref, $defs (recursive)": {
    $defs: {
      node: {
        type: "object",
        properties: {
          v: { type: "integer", minimum: 0, maximum: 9 },
          next: { anyOf: [{ $ref: "#/$defs/node" }, { type: "null" }] },
        },
        required: ["v", "next"],
      },
    },
    $ref: "#/$defs/node",
  },
  nullable: { type: "integer", minimum: 0, maximum: 1, nullable: true },
  "minProperties, maxProperties": {
    type: "object",
    properties: { p: { type: "boolean" }, q: { type: "boolean" } },
    minProperties: 1,
    maxProperties: 2,
  },
};

test("every enforced keyword: answers generated under it at three samplings are valid, judged by ajv", async () => {
  let ended = 0;
  for (const [keyword, schema] of Object.entries(KEYWORD_SCHEMAS)) {
    const validate = ajv.compile(schema);
    for (const sampling of SAMPLINGS.slice(0, 3)) {
      const response = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: "user", content: "Answer in JSON." }],
        response_format: { type: "json_schema", json_schema: { name: "answer", schema } },
        max_tokens: 200,
        ...sampling,
      });
      const text = response.choices[0]?.message.content ?? "";
      // An answer cut by max_tokens is not whole JSON; none that ended may break the schema.
      if (response.choices[0]?.finish_reason !== "stop") continue;
      ended++;
      assert.ok(validate(JSON.parse(text)), `${keyword} ${JSON.stringify(sampling)}: ${text} ${JSON.stringify(validate.errors)}`);
    }
  }
  const asked = Object.keys(KEYWORD_SCHEMAS).length * 3;
  assert.ok(ended >= asked * 0.8, `${ended} of ${asked} answers ended within 200 tokens`);
});

test("a keyword that cannot be enforced is refused with 400 naming it and its pointer, for response_format and tools", async () => {
  const notSchema = { type: "object", properties: { x: { not: { type: "string" } } } };
  const format = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: MODEL,
      messages: [{ role: "user", content: "Hi" }],
      response_format: { type: "json_schema", json_schema: { name: "x", schema: notSchema } },
    }),
  });
  assert.equal(format.status, 400);
  const formatError = ((await format.json()) as { error: { param: string; message: string } }).error;
  assert.equal(formatError.param, "response_format.json_schema.schema/properties/x/not");
  assert.match(formatError.message, /'not' at \/properties\/x\/not cannot be enforced/);

  const tools = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: MODEL,
      messages: [{ role: "user", content: "Hi" }],
      tools: [
        { type: "function", function: { name: "ok", parameters: { type: "object" } } },
        { type: "function", function: { name: "bad", parameters: notSchema } },
      ],
      tool_choice: "required",
    }),
  });
  assert.equal(tools.status, 400);
  const toolsError = ((await tools.json()) as { error: { param: string; message: string } }).error;
  assert.equal(toolsError.param, "tools[1].function.parameters/properties/x/not");
  assert.match(toolsError.message, /tool 'bad'/);
});

async function complete(body: Record<string, unknown>): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${server.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, prompt: "Answer:", max_tokens: 60, ...body }),
  });
  return { status: response.status, json: (await response.json()) as Record<string, unknown> };
}

const textOf = (json: Record<string, unknown>) => (json.choices as { text: string }[])[0]?.text ?? "";

test("vLLM's guided_choice, guided_regex, guided_json and guided_grammar hold at every sampling", async () => {
  const schema = { type: "object", properties: { k: { type: "integer", minimum: 10, maximum: 12 } }, required: ["k"] };
  const validate = ajv.compile(schema);
  for (const sampling of SAMPLINGS) {
    const choice = await complete({ guided_choice: ["red", "green", "blue"], ...sampling });
    assert.ok(["red", "green", "blue"].includes(textOf(choice.json)), JSON.stringify(choice.json));
    const regex = await complete({ guided_regex: "^[0-9]{3}-[a-z]{2,4}$", ...sampling });
    assert.match(textOf(regex.json), /^[0-9]{3}-[a-z]{2,4}$/);
    const json = await complete({ guided_json: schema, ...sampling });
    assert.ok(validate(JSON.parse(textOf(json.json))), textOf(json.json));
    const grammar = await complete({ guided_grammar: 'root ::= ("yes" | "no") "!"', ...sampling });
    assert.match(textOf(grammar.json), /^(yes|no)!$/);
  }
});

test("vLLM 0.12's structured_outputs holds as the guided fields it replaced; its other options are refused by name", async () => {
  const schema = { type: "object", properties: { k: { type: "integer", minimum: 10, maximum: 12 } }, required: ["k"] };
  const validate = ajv.compile(schema);
  for (const sampling of SAMPLINGS.slice(0, 3)) {
    const choice = await complete({ structured_outputs: { choice: ["red", "green"] }, ...sampling });
    assert.ok(["red", "green"].includes(textOf(choice.json)), JSON.stringify(choice.json));
    const regex = await complete({ structured_outputs: { regex: "[0-9]{2}:[a-f]{3}" }, ...sampling });
    assert.match(textOf(regex.json), /^[0-9]{2}:[a-f]{3}$/);
    const json = await complete({ structured_outputs: { json: schema, disable_fallback: false }, ...sampling });
    assert.ok(validate(JSON.parse(textOf(json.json))), textOf(json.json));
    const grammar = await complete({ structured_outputs: { grammar: 'root ::= "ok" [.!]' }, ...sampling });
    assert.match(textOf(grammar.json), /^ok[.!]$/);
    const object = await complete({ structured_outputs: { json_object: true }, max_tokens: 200, ...sampling });
    if ((object.json.choices as { finish_reason: string }[])[0]?.finish_reason === "stop") {
      assert.equal(typeof JSON.parse(textOf(object.json)), "object", textOf(object.json));
    }
  }
  const refusedParam = async (body: Record<string, unknown>) => {
    const answer = await complete(body);
    assert.equal(answer.status, 400, JSON.stringify(answer.json));
    return (answer.json.error as { param: string }).param;
  };
  assert.equal(
    await refusedParam({ structured_outputs: { regex: "a", whitespace_pattern: " *" } }),
    "structured_outputs.whitespace_pattern",
  );
  assert.equal(
    await refusedParam({ structured_outputs: { regex: "a", disable_any_whitespace: true } }),
    "structured_outputs.disable_any_whitespace",
  );
  assert.equal(await refusedParam({ structured_outputs: { regex: "a", choice: ["a"] } }), "structured_outputs");
  assert.equal(await refusedParam({ structured_outputs: {} }), "structured_outputs");
  assert.equal(await refusedParam({ structured_outputs: { regex: "(?<=a)b" } }), "structured_outputs.regex");
  assert.equal(
    await refusedParam({ structured_outputs: { json: { type: "object", properties: { x: { not: {} } } } } }),
    "structured_outputs.json/properties/x/not",
  );
  assert.equal(await refusedParam({ structured_outputs: { grammar: "root ::= (" } }), "structured_outputs.grammar");
  assert.equal(await refusedParam({ structured_outputs: { regex: "a" }, guided_regex: "a" }), "guided_regex");
});

test("guided fields are refused by name when they cannot be read, or when two constrain one answer", async () => {
  const bad = await complete({ guided_grammar: "root ::= (unclosed" });
  assert.equal(bad.status, 400);
  assert.equal((bad.json.error as { param: string }).param, "guided_grammar");
  const look = await complete({ guided_regex: "(?=a)b" });
  assert.equal((look.json.error as { param: string }).param, "guided_regex");
  const both = await complete({ guided_choice: ["a"], guided_regex: "a" });
  assert.equal(both.status, 400);
  assert.match((both.json.error as { message: string }).message, /'guided_regex' and 'guided_choice' both constrain the answer/);
  const notJson = await complete({ guided_json: { type: "object", properties: { x: { not: {} } } } });
  assert.equal((notJson.json.error as { param: string }).param, "guided_json/properties/x/not");
});
