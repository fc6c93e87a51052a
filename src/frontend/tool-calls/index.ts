export { hermesParser } from "./hermes.js";
export { llama3JsonParser } from "./llama3-json.js";
export { mistralParser } from "./mistral.js";
export { inferToolCallParser, isToolCallParserName, toolCallParser } from "./parsers.js";
export { pythonicParser } from "./pythonic.js";
export type { ChatDelta, ChatDeltaShaper, ToolCallChunk } from "./stream-types.js";
export { readConstrainedCalls, toolCallConstraint } from "./tool-constraint.js";
export { parseMessageToolCalls, parseToolCallId, templateToolCalls, templateTools } from "./tool-messages.js";
export { answerWithToolCalls, planToolCalls, type ToolCallPlan, toolCallStream } from "./tool-plan.js";
export { parseToolRequest } from "./tool-request.js";
export {
  type ChatToolCall,
  type FunctionTool,
  type ParsedToolCall,
  TOOL_CALL_PARSER_NAMES,
  type ToolCallParse,
  type ToolCallParser,
  type ToolCallParserName,
  type ToolChoice,
  type ToolRequest,
} from "./types.js";
