import assert from "node:assert/strict";
import { test } from "node:test";
import { llama3JsonParser } from "./llama3-json.js";
import { ParsedCallStream } from "./parsed-stream.js";
import { canonical, reassemble } from "./test-helpers.js";

// Model outputs from vLLM's tests/tool_parsers/test_llama3_json_tool_parser.py (Llama-3.2-1B-Instruct)
// and Dynamo's lib/parsers/src/tool_calling/test_cases/fixtures/llama3_json.rs.

test("llama3_json: a call inside prose; content is null, as vLLM returns it", () => {
  const parsed = llama3JsonParser.parse(
    'Here is the result: {"name": "getOpenIncidentsTool", "parameters": {}} Would you like to know more?',
  );
  assert.equal(parsed.content, null);
  assert.deepEqual(canonical(parsed.calls), [{ name: "getOpenIncidentsTool", arguments: {} }]);
});

test("llama3_json: parameters or arguments", () => {
  assert.deepEqual(
    canonical(llama3JsonParser.parse('{"name": "searchTool", "parameters": {"query": "test query", "limit": 10}}').calls),
    [{ name: "searchTool", arguments: { query: "test query", limit: 10 } }],
  );
  assert.deepEqual(canonical(llama3JsonParser.parse('{"name": "searchTool", "arguments": {"query": "test"}}').calls), [
    { name: "searchTool", arguments: { query: "test" } },
  ]);
});

test("llama3_json: no JSON, invalid JSON, no name, no parameters: the answer is content", () => {
  for (const text of [
    "This is just some text without any tool calls",
    '{"name": "invalidTool", "parameters": {invalid json}',
    '{"parameters": {}}',
    '{"name": "toolWithoutParams"}',
  ]) {
    assert.deepEqual(llama3JsonParser.parse(text), { content: text, calls: [] }, text);
  }
});

test("llama3_json: calls joined by semicolons, with spaces and surrounding text", () => {
  const expected = [
    { name: "searchTool", arguments: { query: "test1" } },
    { name: "getOpenIncidentsTool", arguments: {} },
    { name: "searchTool", arguments: { query: "test2" } },
  ];
  for (const text of [
    '{"name": "searchTool", "parameters": {"query": "test1"}}; {"name": "getOpenIncidentsTool", "parameters": {}}; {"name": "searchTool", "parameters": {"query": "test2"}}',
    '{"name": "searchTool", "parameters": {"query": "test1"}} ; {"name": "getOpenIncidentsTool", "parameters": {}} ; {"name": "searchTool", "parameters": {"query": "test2"}}',
    'Here are the results: {"name": "searchTool", "parameters": {"query": "test1"}}; {"name": "getOpenIncidentsTool", "parameters": {}}; {"name": "searchTool", "parameters": {"query": "test2"}} Would you like to know more?',
  ]) {
    assert.deepEqual(canonical(llama3JsonParser.parse(text).calls), expected, text);
  }
});

test("llama3_json: nesting, brackets and escaped quotes inside strings", () => {
  const nested = llama3JsonParser.parse(
    '{"name": "complexTool", "parameters": {"level1": {"level2": {"level3": {"level4": {"value": "deep"}}}}}}',
  );
  assert.deepEqual(canonical(nested.calls), [
    { name: "complexTool", arguments: { level1: { level2: { level3: { level4: { value: "deep" } } } } } },
  ]);
  const brackets = llama3JsonParser.parse(
    '{"name": "searchTool", "parameters": {"query": "test {value} [complex]","nested": {"inner": "more {brackets}"}}}',
  );
  assert.deepEqual(canonical(brackets.calls), [
    { name: "searchTool", arguments: { query: "test {value} [complex]", nested: { inner: "more {brackets}" } } },
  ]);
  const quotes = llama3JsonParser.parse('{"name": "parserTool", "parameters": {"text": "He said \\"Hello {world}\\""}}');
  assert.deepEqual(canonical(quotes.calls), [{ name: "parserTool", arguments: { text: 'He said "Hello {world}"' } }]);
});

test("llama3_json: braces or JSON in trailing prose keep the call", () => {
  for (const text of [
    '{"name": "searchTool", "parameters": {"query": "test"}} I used {searchTool} for this.',
    '{"name": "searchTool", "parameters": {"query": "test"}} The arguments I passed were {"query": "test"}',
  ]) {
    assert.deepEqual(canonical(llama3JsonParser.parse(text).calls), [{ name: "searchTool", arguments: { query: "test" } }], text);
  }
});

test("llama3_json: Dynamo's <|python_tag|> fixture", () => {
  const parsed = llama3JsonParser.parse('<|python_tag|>{"name":"get_weather","arguments":{"location":"Paris"}}');
  assert.deepEqual(canonical(parsed.calls), [{ name: "get_weather", arguments: { location: "Paris" } }]);
});

for (const separator of ["; ", ";", ";\n", "\n"]) {
  test(`llama3_json streamed: parallel calls separated by ${JSON.stringify(separator)}`, () => {
    const text = `{"name": "searchTool", "parameters": {"query": "test1"}}${separator}{"name": "getOpenIncidentsTool", "parameters": {}}`;
    const out = reassemble(new ParsedCallStream(llama3JsonParser), text, 7);
    assert.deepEqual(
      out.calls.map((c) => [c.name, c.arguments]),
      [
        ["searchTool", { query: "test1" }],
        ["getOpenIncidentsTool", {}],
      ],
    );
    assert.equal(out.content, "");
  });
}
