/** A function the model may call, as a chat request declares it (`tools[].function`). */
export interface FunctionTool {
  readonly name: string;
  readonly description?: string | undefined;
  /** JSON schema of the arguments object; `{type:"object",properties:{}}` when the tool declared none. */
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** `tool_choice`: call nothing, let the model decide, call something, or call this function. */
export type ToolChoice =
  | { readonly type: "none" }
  | { readonly type: "auto" }
  | { readonly type: "required" }
  | { readonly type: "function"; readonly name: string };

/** A chat request's tool fields, validated. */
export interface ToolRequest {
  readonly tools: readonly FunctionTool[];
  readonly choice: ToolChoice;
  /** `parallel_tool_calls` (default true): whether one answer may hold more than one call. */
  readonly parallel: boolean;
}

/** One call recovered from the model's text: the function's name and its arguments as JSON text. */
export interface ParsedToolCall {
  readonly name: string;
  readonly arguments: string;
}

/** What a parser makes of a model's whole answer: the text that is not a call, and the calls. */
export interface ToolCallParse {
  /** Null when the answer held calls and nothing else worth showing. */
  readonly content: string | null;
  readonly calls: readonly ParsedToolCall[];
}

/** A tool-call format some model family writes (`--tool-call-parser`). */
export interface ToolCallParser {
  readonly name: ToolCallParserName;
  /** Where in `text` (the answer so far) a tool call begins, or -1 while none has. */
  callStart(text: string): number;
  /**
   * How many characters at the end of `text` might still become the start of a call: streaming
   * holds them back until the next text tells.
   */
  pendingTail(text: string): number;
  /** The calls in a whole answer; text that is no call becomes `content`. Never throws. */
  parse(text: string): ToolCallParse;
}

export const TOOL_CALL_PARSER_NAMES = ["hermes", "llama3_json", "mistral", "pythonic"] as const;
export type ToolCallParserName = (typeof TOOL_CALL_PARSER_NAMES)[number];

/** A call as the OpenAI API returns it in `message.tool_calls`. */
export interface ChatToolCall {
  readonly id: string;
  readonly type: "function";
  readonly function: { readonly name: string; readonly arguments: string };
}
