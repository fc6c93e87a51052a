import { newToolCallId } from "./call-ids.js";
import type { ChatDelta, ChatDeltaShaper } from "./stream-types.js";
import type { ToolCallParser } from "./types.js";

/**
 * Streams an answer of `tool_choice: "auto"`: text passes as content until the parser sees a call
 * begin (a tail that may still become its marker is held back); from there the text is held and
 * re-parsed as it grows, and each call is sent whole once it parses (id, type and name, then its
 * arguments). A marker that never becomes a call is sent as content at the end.
 */
export class ParsedCallStream implements ChatDeltaShaper {
  readonly #parser: ToolCallParser;
  readonly #maxCalls: number;
  #text = "";
  #sentText = 0;
  #callsFrom = -1;
  #sentCalls = 0;

  /** `maxCalls`: calls sent at most (1 without `parallel_tool_calls`); later ones are dropped. */
  constructor(parser: ToolCallParser, maxCalls = Number.POSITIVE_INFINITY) {
    this.#parser = parser;
    this.#maxCalls = maxCalls;
  }

  get calledTools(): boolean {
    return this.#sentCalls > 0;
  }

  push(text: string): ChatDelta[] {
    this.#text += text;
    if (this.#callsFrom < 0) {
      const start = this.#parser.callStart(this.#text);
      if (start < 0) return this.#content(this.#text.length - this.#parser.pendingTail(this.#text));
      this.#callsFrom = start;
      return [...this.#content(start), ...this.#calls()];
    }
    return this.#calls();
  }

  finish(): ChatDelta[] {
    if (this.#callsFrom < 0) return this.#content(this.#text.length);
    const calls = this.#calls();
    if (this.#sentCalls === 0) return [{ type: "content", text: this.#text.slice(this.#sentText) }];
    return calls;
  }

  #content(upTo: number): ChatDelta[] {
    if (upTo <= this.#sentText) return [];
    const text = this.#text.slice(this.#sentText, upTo);
    this.#sentText = upTo;
    return [{ type: "content", text }];
  }

  /** The calls parsed since the last time. A call parses only once whole (its JSON closed, a pythonic list ended). */
  #calls(): ChatDelta[] {
    const { calls } = this.#parser.parse(this.#text.slice(this.#callsFrom));
    const fresh = calls.slice(this.#sentCalls, this.#maxCalls);
    const first = this.#sentCalls;
    this.#sentCalls = Math.max(this.#sentCalls, Math.min(calls.length, this.#maxCalls));
    return fresh.flatMap((call, i): ChatDelta[] => [
      {
        type: "tool-calls",
        calls: [{ index: first + i, id: newToolCallId(), type: "function", function: { name: call.name, arguments: "" } }],
      },
      { type: "tool-calls", calls: [{ index: first + i, function: { arguments: call.arguments } }] },
    ]);
  }
}
