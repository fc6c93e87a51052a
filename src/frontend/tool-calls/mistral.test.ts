import assert from "node:assert/strict";
import { test } from "node:test";
import { mistralParser } from "./mistral.js";
import { ParsedCallStream } from "./parsed-stream.js";
import { canonical, reassemble } from "./test-helpers.js";

// Model outputs from vLLM's tests/tool_parsers/test_mistral_tool_parser.py (Mistral-7B-Instruct-v0.3,
// Mistral-Small-3.2) and Dynamo's lib/parsers/src/tool_calling/test_cases/fixtures/mistral.rs.

const weather = { city: "San Francisco", state: "CA", unit: "celsius" };

test("mistral: no marker, the answer is content", () => {
  assert.deepEqual(mistralParser.parse("This is a test"), { content: "This is a test", calls: [] });
});

test("mistral before v11: a JSON array after [TOOL_CALLS]", () => {
  const cases: [string, { name: string; arguments: unknown }[], string | null][] = [
    ['[TOOL_CALLS][{"name": "add", "arguments":{"a": 3.5, "b": 4}}]', [{ name: "add", arguments: { a: 3.5, b: 4 } }], null],
    [
      `[TOOL_CALLS] [{"name": "get_current_weather", "arguments":${JSON.stringify(weather)}}]`,
      [{ name: "get_current_weather", arguments: weather }],
      null,
    ],
    [
      '[TOOL_CALLS] [{"arguments":{"city": "San Francisco", "state": "CA", "unit": "celsius"}, "name": "get_current_weather"}]',
      [{ name: "get_current_weather", arguments: weather }],
      null,
    ],
    [
      '[TOOL_CALLS] [{"arguments":{"name": "John Doe"}, "name": "get_age"}]',
      [{ name: "get_age", arguments: { name: "John Doe" } }],
      null,
    ],
    [
      '[TOOL_CALLS] [{"name": "add", "arguments": {"a": 3.5, "b": 4}}, {"name": "get_current_weather", "arguments":{"city": "San Francisco", "state": "CA", "unit": "celsius"}}]',
      [
        { name: "add", arguments: { a: 3.5, b: 4 } },
        { name: "get_current_weather", arguments: weather },
      ],
      null,
    ],
    ['Hello[TOOL_CALLS] [{"name": "add", "arguments":{"a": 1, "b": 2}}]', [{ name: "add", arguments: { a: 1, b: 2 } }], "Hello"],
    [
      '[TOOL_CALLS] [{"name": "get_current_weather", "arguments":{"city": "Dallas", "state": "TX", "unit": "fahrenheit"}}]\nextra trailing data',
      [{ name: "get_current_weather", arguments: { city: "Dallas", state: "TX", unit: "fahrenheit" } }],
      null,
    ],
    [
      '[TOOL_CALLS]  junk [{"name": "add", "arguments":{"a": 1, "b": 2}}] trail',
      [{ name: "add", arguments: { a: 1, b: 2 } }],
      null,
    ],
  ];
  for (const [text, calls, content] of cases) {
    const parsed = mistralParser.parse(text);
    assert.deepEqual(canonical(parsed.calls), calls, text);
    assert.equal(parsed.content, content, text);
  }
});

test("mistral before v11: a marker followed by no JSON is content", () => {
  assert.deepEqual(mistralParser.parse("[TOOL_CALLS] not json at all"), { content: "not json at all", calls: [] });
});

test("mistral v11: name{arguments} after each marker", () => {
  assert.deepEqual(canonical(mistralParser.parse('[TOOL_CALLS]add_this_and_that{"a": 3.5, "b": 4}').calls), [
    { name: "add_this_and_that", arguments: { a: 3.5, b: 4 } },
  ]);
  assert.deepEqual(
    canonical(mistralParser.parse('[TOOL_CALLS]add{"a": 3.5, "b": 4}[TOOL_CALLS]multiply{"a": 3, "b": 6}').calls),
    [
      { name: "add", arguments: { a: 3.5, b: 4 } },
      { name: "multiply", arguments: { a: 3, b: 6 } },
    ],
  );
  const complex = mistralParser.parse('hi{hi[TOOL_CALLS]bash{"command": "print(\\"hello world!\\")\\nre.compile(r\'{}\')"}');
  assert.equal(complex.content, "hi{hi");
  assert.deepEqual(canonical(complex.calls), [
    { name: "bash", arguments: { command: "print(\"hello world!\")\nre.compile(r'{}')" } },
  ]);
});

test("mistral: Dynamo's fixtures, with and without [/TOOL_CALLS]", () => {
  for (const text of [
    '[TOOL_CALLS]{"name":"get_weather","arguments":{"location":"Paris"}}[/TOOL_CALLS]',
    '[TOOL_CALLS]{"name":"get_weather","arguments":{"location":"Paris"}}',
  ]) {
    assert.deepEqual(
      canonical(mistralParser.parse(text).calls),
      [{ name: "get_weather", arguments: { location: "Paris" } }],
      text,
    );
  }
});

test("mistral streamed: content before the marker, then the calls", () => {
  const out = reassemble(new ParsedCallStream(mistralParser), 'bla[TOOL_CALLS]add_this_and_that{"a": 3.5, "b": 4}', 2);
  assert.equal(out.content, "bla");
  assert.deepEqual(
    out.calls.map((c) => [c.name, c.arguments]),
    [["add_this_and_that", { a: 3.5, b: 4 }]],
  );
});
