import { hermesParser } from "./hermes.js";
import { llama3JsonParser } from "./llama3-json.js";
import { mistralParser } from "./mistral.js";
import { pythonicParser } from "./pythonic.js";
import { TOOL_CALL_PARSER_NAMES, type ToolCallParser, type ToolCallParserName } from "./types.js";

const PARSERS: Readonly<Record<ToolCallParserName, ToolCallParser>> = {
  hermes: hermesParser,
  llama3_json: llama3JsonParser,
  mistral: mistralParser,
  pythonic: pythonicParser,
};

/** Whether `name` is a `--tool-call-parser` value. */
export function isToolCallParserName(name: string): name is ToolCallParserName {
  return (TOOL_CALL_PARSER_NAMES as readonly string[]).includes(name);
}

/** The parser `--tool-call-parser NAME` names. */
export function toolCallParser(name: ToolCallParserName): ToolCallParser {
  return PARSERS[name];
}

/**
 * The parser a chat template's own tool-call syntax points to, when `--tool-call-parser` is not
 * given: the marker the template teaches the model (`<tool_call>` → hermes, `[TOOL_CALLS]` →
 * mistral, `<|python_start|>` → pythonic, `<|python_tag|>` → llama3_json). Undefined when the
 * template shows none; `tool_choice: "auto"` then returns the model's text as content.
 */
export function inferToolCallParser(chatTemplate: string | undefined): ToolCallParser | undefined {
  if (!chatTemplate) return undefined;
  if (chatTemplate.includes("<tool_call>")) return hermesParser;
  if (chatTemplate.includes("[TOOL_CALLS]")) return mistralParser;
  if (chatTemplate.includes("<|python_start|>")) return pythonicParser;
  if (chatTemplate.includes("<|python_tag|>")) return llama3JsonParser;
  return undefined;
}
