import { callFromObject, jsonValueEnd, markerPrefixLength, tryParseJson } from "./json-scan.js";
import type { ParsedToolCall, ToolCallParse, ToolCallParser } from "./types.js";

const START = "[TOOL_CALLS]";
const END = "[/TOOL_CALLS]";
/** Tokenizer v11+: `[TOOL_CALLS]name{arguments}`, one marker per call. */
const NAMED_ARGUMENTS = /^\s*([A-Za-z_][\w.-]*)\s*(?=\{)/;

/**
 * Mistral: `[TOOL_CALLS]` then a JSON array of `{"name", "arguments"}` objects (tokenizers before
 * v11), or `name{…}` after each marker (v11 and later); an optional `[/TOOL_CALLS]` closes them.
 * Text before the first marker is content; text after the calls is dropped, as vLLM does.
 */
export const mistralParser: ToolCallParser = {
  name: "mistral",
  callStart: (text) => text.indexOf(START),
  pendingTail: (text) => markerPrefixLength(text, [START]),
  parse(text: string): ToolCallParse {
    const first = text.indexOf(START);
    if (first < 0) return { content: text, calls: [] };
    const before = text.slice(0, first);
    const segments = text
      .slice(first + START.length)
      .split(END)
      .join("")
      .split(START);
    const calls = segments.flatMap(parseSegment);
    if (calls.length === 0) return { content: (before + segments.join("").trimStart()).trim(), calls: [] };
    return { content: before.trim() === "" ? null : before, calls };
  },
};

function parseSegment(segment: string): ParsedToolCall[] {
  const named = NAMED_ARGUMENTS.exec(segment);
  if (named) {
    const open = named[0].length;
    const end = jsonValueEnd(segment, open);
    const args = end < 0 ? undefined : tryParseJson(segment.slice(open, end));
    return args === undefined ? [] : [{ name: named[1] as string, arguments: JSON.stringify(args) }];
  }
  const open = segment.search(/[[{]/);
  if (open < 0) return [];
  const end = jsonValueEnd(segment, open);
  const value = end < 0 ? undefined : tryParseJson(segment.slice(open, end));
  const items = Array.isArray(value) ? value : [value];
  const calls = items.map(callFromObject);
  return calls.every((c) => c !== undefined) ? (calls as ParsedToolCall[]) : [];
}
