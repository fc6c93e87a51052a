export {
  REASONING_PARSER_NAMES,
  type ReasoningDelta,
  type ReasoningParserName,
  ReasoningStream,
  type SplitAnswer,
  splitReasoning,
} from "./reasoning-parser.js";
