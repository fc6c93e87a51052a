import assert from "node:assert/strict";
import { test } from "node:test";
import type { GenerationEnd } from "../generation.js";
import type { ResponseIdentity } from "./responses-format.js";
import { ResponsesEventStream } from "./responses-stream.js";

const idn: ResponseIdentity = {
  id: "resp_1",
  itemId: "msg_1",
  createdAt: 0,
  model: "m",
  echo: {
    instructions: null,
    maxOutputTokens: null,
    temperature: 1,
    topP: 1,
    metadata: {},
    toolChoice: "auto",
    tools: [],
    parallelToolCalls: true,
    textFormat: { type: "text" },
    user: null,
    safetyIdentifier: null,
    promptCacheKey: null,
  },
};
const end = (finishReason: "stop" | "length"): GenerationEnd => ({
  type: "end",
  finishReason,
  usage: { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5, prompt_tokens_details: { cached_tokens: 0 } },
});

test("text, a call, then text again: each item opens, streams and closes in turn, with its own id", () => {
  const s = new ResponsesEventStream(idn);
  const events = [
    ...s.start(),
    ...s.text("Hi"),
    ...s.call({ index: 0, id: "call_a", type: "function", function: { name: "f", arguments: '{"x"' } }),
    ...s.call({ index: 0, function: { arguments: ":1}" } }),
    ...s.text("ok"),
    ...s.end(end("stop")),
  ];
  assert.deepEqual(
    events.map((e) => e.type),
    [
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.delta",
      "response.function_call_arguments.done",
      "response.output_item.done",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ],
  );
  assert.deepEqual(
    events.map((e) => e.sequence_number),
    events.map((_, i) => i),
  );
  const output = (events.at(-1) as unknown as { response: { output: Record<string, unknown>[] } }).response.output;
  assert.deepEqual(
    output.map((item) => [item.type, item.id]),
    [
      ["message", "msg_1"],
      ["function_call", "fc_a"],
      ["message", "msg_1_2"],
    ],
  );
  assert.equal(output[1]?.arguments, '{"x":1}');
});

test("an empty answer still has one empty message; a cut one ends incomplete", () => {
  const s = new ResponsesEventStream(idn);
  const types = [...s.start(), ...s.end(end("length"))].map((e) => e.type);
  assert.deepEqual(types.slice(2), [
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
    "response.incomplete",
  ]);
});
