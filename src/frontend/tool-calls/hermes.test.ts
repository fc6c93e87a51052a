import assert from "node:assert/strict";
import { test } from "node:test";
import { hermesParser } from "./hermes.js";
import { ParsedCallStream } from "./parsed-stream.js";
import { canonical, reassemble } from "./test-helpers.js";

// Model outputs from vLLM's tests/tool_parsers/test_hermes_tool_parser.py (Qwen3 / Hermes 2 Pro),
// and Dynamo's lib/parsers/src/tool_calling/test_cases/fixtures/hermes.rs.

test("hermes: plain text is content, no calls", () => {
  assert.deepEqual(hermesParser.parse("This is not a tool call."), { content: "This is not a tool call.", calls: [] });
});

test("hermes: a call between tags (vLLM bug 19056 output)", () => {
  const parsed = hermesParser.parse('<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}\n</tool_call>');
  assert.equal(parsed.content, null);
  assert.deepEqual(canonical(parsed.calls), [{ name: "final_answer", arguments: { trigger: true } }]);
});

test("hermes: a call cut off before its closing tag still counts", () => {
  const parsed = hermesParser.parse('<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}');
  assert.deepEqual(canonical(parsed.calls), [{ name: "final_answer", arguments: { trigger: true } }]);
});

test("hermes: JSON missing its closing brace is no call; the answer is content", () => {
  const text = '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}';
  assert.deepEqual(hermesParser.parse(text), { content: text, calls: [] });
});

test("hermes: arguments the model serialised are not encoded twice", () => {
  const parsed = hermesParser.parse(
    '<tool_call>\n{"name": "get_db_config", "arguments": "{\\"param\\": \\"max_connections\\"}"}\n</tool_call>',
  );
  assert.deepEqual(canonical(parsed.calls), [{ name: "get_db_config", arguments: { param: "max_connections" } }]);
  const bare = hermesParser.parse('<tool_call>\n{"name": "do_thing", "arguments": "hello"}\n</tool_call>');
  assert.deepEqual(canonical(bare.calls), [{ name: "do_thing", arguments: "hello" }]);
});

test("hermes: text before a call is content; two calls in a row", () => {
  const parsed = hermesParser.parse(
    'Sure, let me check the weather.<tool_call>{"name": "get_weather", "arguments": {"city": "NYC"}}</tool_call>',
  );
  assert.equal(parsed.content, "Sure, let me check the weather.");
  assert.deepEqual(canonical(parsed.calls), [{ name: "get_weather", arguments: { city: "NYC" } }]);
  const two = hermesParser.parse(
    '<tool_call>{"name": "search", "arguments": {"q": "cats"}}</tool_call><tool_call>{"name": "search", "arguments": {"q": "dogs"}}</tool_call>',
  );
  assert.deepEqual(canonical(two.calls), [
    { name: "search", arguments: { q: "cats" } },
    { name: "search", arguments: { q: "dogs" } },
  ]);
});

test("hermes: Dynamo's single-call fixture", () => {
  const parsed = hermesParser.parse(
    '<tool_call>{"name":"get_weather","arguments":{"location":"Paris","unit":"celsius"}}\n</tool_call>',
  );
  assert.deepEqual(canonical(parsed.calls), [{ name: "get_weather", arguments: { location: "Paris", unit: "celsius" } }]);
});

for (const size of [1, 2, 3, 5, 8]) {
  test(`hermes streamed in pieces of ${size}: content first, then each call whole`, () => {
    const text =
      'Sure, let me check the weather.<tool_call>{"name": "get_weather", "arguments": {"city": "NYC"}}</tool_call>' +
      '<tool_call>\n{"name": "get_current_temperature",\n"arguments": {"location":\n"San Francisco, California, United States", "unit": "celsius"}}\n</tool_call>';
    const out = reassemble(new ParsedCallStream(hermesParser), text, size);
    assert.equal(out.content, "Sure, let me check the weather.");
    assert.deepEqual(
      out.calls.map((c) => ({ name: c.name, arguments: c.arguments })),
      [
        { name: "get_weather", arguments: { city: "NYC" } },
        { name: "get_current_temperature", arguments: { location: "San Francisco, California, United States", unit: "celsius" } },
      ],
    );
    assert.match(out.calls[0]?.id ?? "", /^call_[0-9a-f]{24}$/);
    assert.notEqual(out.calls[0]?.id, out.calls[1]?.id);
  });
}

test("hermes streamed: plain text passes through whole, even a '<' that starts no call", () => {
  const text = "This is plain text with no tool calling involved. 1 < 2 <tool";
  const out = reassemble(new ParsedCallStream(hermesParser), text, 3);
  assert.deepEqual(out, { content: text, calls: [] });
});
