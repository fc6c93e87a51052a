import assert from "node:assert/strict";
import { test } from "node:test";
import { type ReasoningParserName, ReasoningStream, splitReasoning } from "./reasoning-parser.js";

// Golden cases from vLLM's parser tests (tests/reasoning/test_deepseekr1_reasoning_parser.py and
// tests/reasoning/test_qwen3_reasoning_parser.py): the model output, then the reasoning and content
// a whole response gives, then what the streamed deltas add up to (null: no delta of that kind).
interface Case {
  readonly name: string;
  readonly output: string;
  readonly whole: { readonly reasoning: string; readonly content: string | null };
  readonly streamed: { readonly reasoning: string | null; readonly content: string | null };
}

const TOOL_CALL_BODY =
  "<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n</parameter>\n</function>\n</tool_call>";

const common: Case[] = [
  {
    name: "reasoning, then the rest",
    output: "This is a reasoning section</think>This is the rest",
    whole: { reasoning: "This is a reasoning section", content: "This is the rest" },
    streamed: { reasoning: "This is a reasoning section", content: "This is the rest" },
  },
  {
    name: "reasoning and nothing after",
    output: "This is a reasoning section</think>",
    whole: { reasoning: "This is a reasoning section", content: null },
    streamed: { reasoning: "This is a reasoning section", content: null },
  },
  {
    name: "no end marker: cut off while thinking",
    output: "This is content",
    whole: { reasoning: "This is content", content: null },
    streamed: { reasoning: "This is content", content: null },
  },
  {
    name: "several lines",
    output: "This\nThat</think>This is the rest\nThat",
    whole: { reasoning: "This\nThat", content: "This is the rest\nThat" },
    streamed: { reasoning: "This\nThat", content: "This is the rest\nThat" },
  },
  {
    name: "the shortest",
    output: "</think>This is the rest",
    whole: { reasoning: "", content: "This is the rest" },
    streamed: { reasoning: null, content: "This is the rest" },
  },
  {
    name: "with <think> in the output",
    output: "<think>This is a reasoning section</think>This is the rest",
    whole: { reasoning: "This is a reasoning section", content: "This is the rest" },
    streamed: { reasoning: "This is a reasoning section", content: "This is the rest" },
  },
  {
    name: "<think> and no end",
    output: "<think>This is a reasoning section",
    whole: { reasoning: "This is a reasoning section", content: null },
    streamed: { reasoning: "This is a reasoning section", content: null },
  },
  {
    name: "empty",
    output: "",
    whole: { reasoning: "", content: null },
    streamed: { reasoning: null, content: null },
  },
  {
    // A whole response drops what came before <think>; streamed, it went out as reasoning already.
    name: "a new line before <think>",
    output: "\n<think>This is a reasoning section</think>\nThis is the rest",
    whole: { reasoning: "This is a reasoning section", content: "\nThis is the rest" },
    streamed: { reasoning: "\nThis is a reasoning section", content: "\nThis is the rest" },
  },
];

const qwen3Only: Case[] = [
  {
    name: "a tool call ends the reasoning and stays in the content",
    output: `I need to read the file.\n\n${TOOL_CALL_BODY}`,
    whole: { reasoning: "I need to read the file.\n\n", content: TOOL_CALL_BODY },
    streamed: { reasoning: "I need to read the file.\n\n", content: TOOL_CALL_BODY },
  },
  {
    name: "<think>, then a tool call without </think>",
    output: `<think>I need to read the file.\n\n${TOOL_CALL_BODY}`,
    whole: { reasoning: "I need to read the file.\n\n", content: TOOL_CALL_BODY },
    streamed: { reasoning: "I need to read the file.\n\n", content: TOOL_CALL_BODY },
  },
];

/** Streams `pieces` through a parser and joins the deltas by kind (null: none of that kind). */
function stream(parser: ReasoningParserName, pieces: readonly string[]): { reasoning: string | null; content: string | null } {
  const s = new ReasoningStream(parser);
  const deltas = [...pieces.flatMap((p) => s.push(p)), ...s.finish()];
  for (const d of deltas) assert.notEqual(d.text, "", "no delta is empty");
  const join = (kind: string) => {
    const parts = deltas.filter((d) => d.kind === kind).map((d) => d.text);
    return parts.length === 0 ? null : parts.join("");
  };
  return { reasoning: join("reasoning"), content: join("content") };
}

for (const parser of ["deepseek_r1", "qwen3"] as const) {
  for (const c of [...common, ...(parser === "qwen3" ? qwen3Only : [])]) {
    test(`${parser}: ${c.name}`, () => {
      assert.deepEqual(splitReasoning(parser, c.output), c.whole);
      // One piece, a character at a time, and every cut into two pieces (markers split anywhere).
      assert.deepEqual(stream(parser, [c.output]), c.streamed);
      assert.deepEqual(stream(parser, [...c.output]), c.streamed);
      for (let cut = 1; cut < c.output.length; cut++) {
        assert.deepEqual(stream(parser, [c.output.slice(0, cut), c.output.slice(cut)]), c.streamed, `cut at ${cut}`);
      }
    });
  }
}

test("deepseek_r1 keeps a <tool_call> inside the reasoning: only qwen3 ends reasoning there", () => {
  const output = `thinking <tool_call>{}</tool_call>`;
  assert.deepEqual(splitReasoning("deepseek_r1", output), { reasoning: output, content: null });
});

test("text that only looks like the start of a marker is released once it is not one", () => {
  const s = new ReasoningStream("deepseek_r1");
  assert.deepEqual(s.push("a </thi"), [{ kind: "reasoning", text: "a " }]);
  assert.deepEqual(s.push("s> b"), [{ kind: "reasoning", text: "</this> b" }]);
  assert.deepEqual(s.finish(), []);
});
