import { PythonCallReader } from "./python-literals.js";
import type { ParsedToolCall, ToolCallParse, ToolCallParser } from "./types.js";

const PYTHON_START = "<|python_start|>";
const PYTHON_END = "<|python_end|>";

/**
 * Pythonic calls (Llama 3.2 / Llama 4 / ToolACE): the whole answer is a Python list of calls,
 * `[get_weather(city='San Francisco'), get_time()]`, optionally inside Llama 4's
 * `<|python_start|>…<|python_end|>`. A call that does not read as literals is dropped and its
 * siblings kept; an answer that is not such a list is content (vLLM's behaviour).
 */
export const pythonicParser: ToolCallParser = {
  name: "pythonic",
  callStart(text) {
    const lead = text.length - text.trimStart().length;
    return text[lead] === "[" || text.startsWith(PYTHON_START, lead) ? lead : -1;
  },
  pendingTail: (text) => (text.trim() === "" || PYTHON_START.startsWith(text.trimStart()) ? text.length : 0),
  parse(text: string): ToolCallParse {
    let body = text.trim();
    if (body.startsWith(PYTHON_START)) body = body.slice(PYTHON_START.length).split(PYTHON_END)[0]?.trim() ?? "";
    if (!body.startsWith("[") || !body.endsWith("]")) return { content: text, calls: [] };
    const calls = readCalls(body.slice(1, -1));
    return calls.length > 0 ? { content: null, calls } : { content: text, calls: [] };
  },
};

function readCalls(list: string): ParsedToolCall[] {
  const reader = new PythonCallReader(list);
  const calls: ParsedToolCall[] = [];
  while (!reader.done) {
    const from = reader.position;
    try {
      const call = reader.call();
      calls.push({ name: call.name, arguments: JSON.stringify(call.args) });
    } catch {
      reader.skipCallFrom(from);
    }
    if (!reader.done && !reader.take(",")) return [];
  }
  return calls;
}
