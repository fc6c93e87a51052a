import { callFromObject, jsonValueEnd, markerPrefixLength, tryParseJson } from "./json-scan.js";
import type { ParsedToolCall, ToolCallParse, ToolCallParser } from "./types.js";

const PYTHON_TAG = "<|python_tag|>";

/**
 * Llama 3.1 / 3.2 JSON calls: `{"name": …, "parameters": {…}}` (or `"arguments"`), several joined by
 * `;`, optionally after `<|python_tag|>`. As vLLM's parser does, the calls are the JSON objects
 * with a name and parameters found from the first `{`; text around them is dropped (content null)
 * when there are any, and the whole answer is content when there are none.
 */
export const llama3JsonParser: ToolCallParser = {
  name: "llama3_json",
  callStart(text) {
    const tag = text.indexOf(PYTHON_TAG);
    if (tag >= 0) return tag;
    // Without the tag a call is an answer that opens with a JSON object.
    const lead = text.length - text.trimStart().length;
    return text[lead] === "{" ? lead : -1;
  },
  pendingTail: (text) => markerPrefixLength(text, [PYTHON_TAG]),
  parse(text: string): ToolCallParse {
    const calls: ParsedToolCall[] = [];
    let at = text.indexOf("{");
    while (at >= 0) {
      const end = jsonValueEnd(text, at);
      if (end < 0) break;
      const call = callFromObject(tryParseJson(text.slice(at, end)));
      if (call) {
        calls.push(call);
        at = text.indexOf("{", end);
      } else if (calls.length > 0) {
        // Prose after the calls that quotes JSON ends them (vLLM: "json fragment in trailing text").
        break;
      } else {
        at = text.indexOf("{", at + 1);
      }
    }
    return calls.length > 0 ? { content: null, calls } : { content: text, calls: [] };
  },
};
