import { callFromObject, jsonValueEnd, markerPrefixLength, tryParseJson } from "./json-scan.js";
import type { ParsedToolCall, ToolCallParse, ToolCallParser } from "./types.js";

const START = "<tool_call>";
const END = "</tool_call>";

/**
 * Hermes 2 Pro / Qwen 2.5+ / Qwen 3: each call is `<tool_call>{"name": …, "arguments": {…}}</tool_call>`;
 * text before the first call is content. A last call cut off before its closing tag still counts
 * when its JSON is whole (an answer ended by end-of-sequence). One call that is not JSON makes the
 * whole answer content, as vLLM's parser does.
 */
export const hermesParser: ToolCallParser = {
  name: "hermes",
  callStart: (text) => text.indexOf(START),
  pendingTail: (text) => markerPrefixLength(text, [START]),
  parse(text: string): ToolCallParse {
    const first = text.indexOf(START);
    if (first < 0) return { content: text, calls: [] };
    const calls: ParsedToolCall[] = [];
    let at = first;
    while (at >= 0) {
      const bodyStart = at + START.length;
      const close = text.indexOf(END, bodyStart);
      const body = text.slice(bodyStart, close < 0 ? undefined : close);
      const call = parseBody(body);
      if (!call) return { content: text, calls: [] };
      calls.push(call);
      if (close < 0) break;
      at = text.indexOf(START, close + END.length);
    }
    const before = text.slice(0, first);
    return { content: before.trim() === "" ? null : before, calls };
  },
};

function parseBody(body: string): ParsedToolCall | undefined {
  const open = body.indexOf("{");
  if (open < 0 || body.slice(0, open).trim() !== "") return undefined;
  const end = jsonValueEnd(body, open);
  if (end < 0) return undefined;
  return callFromObject(tryParseJson(body.slice(open, end)));
}
