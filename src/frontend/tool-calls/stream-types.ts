/** One entry of a stream chunk's `delta.tool_calls` (OpenAI's ChatCompletionMessageToolCallChunk). */
export interface ToolCallChunk {
  readonly index: number;
  /** On a call's first chunk only, with `type` and `function.name`. */
  readonly id?: string;
  readonly type?: "function";
  readonly function: { readonly name?: string; readonly arguments: string };
}

/** What a chat stream sends next: answer text, or pieces of tool calls. */
export type ChatDelta =
  | { readonly type: "content"; readonly text: string }
  | { readonly type: "tool-calls"; readonly calls: readonly ToolCallChunk[] };

/** Turns a chat answer's text deltas into the deltas a chat stream sends. */
export interface ChatDeltaShaper {
  /** The deltas `text` (the next piece of the answer) makes ready. */
  push(text: string): ChatDelta[];
  /** The deltas held back until the answer ended. */
  finish(): ChatDelta[];
  /** Whether any tool call was sent (the finish reason is then `tool_calls`). */
  readonly calledTools: boolean;
}
