import assert from "node:assert/strict";
import { test } from "node:test";
import { ParsedCallStream } from "./parsed-stream.js";
import { pythonicParser } from "./pythonic.js";
import { canonical, reassemble } from "./test-helpers.js";

// Model outputs from vLLM's tests/tool_parsers/test_pythonic_tool_parser.py (after Llama 3.2's
// documented response format) and Dynamo's lib/parsers/src/tool_calling/test_cases/fixtures/pythonic.rs.

const SIMPLE = "get_weather(city='San Francisco', metric='celsius')";
const SIMPLE_CALL = { name: "get_weather", arguments: { city: "San Francisco", metric: "celsius" } };
const MORE_TYPES =
  "register_user(name='John Doe', age=37, address={'city': 'San Francisco', 'state': 'CA'}, role=None, passed_test=True, aliases=['John', 'Johnny'])";
const MORE_TYPES_CALL = {
  name: "register_user",
  arguments: {
    name: "John Doe",
    age: 37,
    address: { city: "San Francisco", state: "CA" },
    role: null,
    passed_test: true,
    aliases: ["John", "Johnny"],
  },
};
const CASES: [string, { name: string; arguments: unknown }[]][] = [
  [`[${SIMPLE}]`, [SIMPLE_CALL]],
  [`[${MORE_TYPES}]`, [MORE_TYPES_CALL]],
  ["[get_weather()]", [{ name: "get_weather", arguments: {} }]],
  ["[do_something_cool(additional_data={})]", [{ name: "do_something_cool", arguments: { additional_data: {} } }]],
  ["[do_something_cool(steps=[])]", [{ name: "do_something_cool", arguments: { steps: [] } }]],
  [
    String.raw`[get_weather(city='Martha\'s Vineyard', metric='\"cool units\"')]`,
    [{ name: "get_weather", arguments: { city: "Martha's Vineyard", metric: '"cool units"' } }],
  ],
  [`[${SIMPLE}, ${MORE_TYPES}]`, [SIMPLE_CALL, MORE_TYPES_CALL]],
];

test("pythonic: no call, the answer is content", () => {
  assert.deepEqual(pythonicParser.parse("How can I help you today?"), { content: "How can I help you today?", calls: [] });
});

test("pythonic: vLLM's cases, whole", () => {
  for (const [text, calls] of CASES) {
    const parsed = pythonicParser.parse(text);
    assert.equal(parsed.content, null, text);
    assert.deepEqual(canonical(parsed.calls), calls, text);
  }
});

test("pythonic: vLLM's cases, streamed a character at a time", () => {
  for (const [text, calls] of CASES) {
    const out = reassemble(new ParsedCallStream(pythonicParser), text, 1);
    assert.equal(out.content, "", text);
    assert.deepEqual(
      out.calls.map((c) => ({ name: c.name, arguments: c.arguments })),
      calls,
      text,
    );
  }
});

test("pythonic: a call that is no literal is dropped and its siblings kept", () => {
  assert.deepEqual(canonical(pythonicParser.parse(`[bad(x=b'z'), ${SIMPLE}]`).calls), [SIMPLE_CALL]);
  assert.deepEqual(canonical(pythonicParser.parse(`[calc(x=1e999), ${SIMPLE}]`).calls), [SIMPLE_CALL]);
  assert.deepEqual(canonical(pythonicParser.parse(`[${SIMPLE}, f(a='x 'y', b='z')]`).calls), [SIMPLE_CALL]);
});

test("pythonic: a list no call of which reads is content", () => {
  const text = "[f(a='x 'y' 'z), g(b='p 'q' 'r)]";
  assert.deepEqual(pythonicParser.parse(text), { content: text, calls: [] });
});

test("pythonic: Dynamo's fixture and Llama 4's python tags", () => {
  assert.deepEqual(canonical(pythonicParser.parse('[get_weather(location="Paris", unit="celsius")]').calls), [
    { name: "get_weather", arguments: { location: "Paris", unit: "celsius" } },
  ]);
  assert.deepEqual(canonical(pythonicParser.parse(`<|python_start|>[${SIMPLE}]<|python_end|>`).calls), [SIMPLE_CALL]);
});
