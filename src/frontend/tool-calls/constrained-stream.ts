import { newToolCallId } from "./call-ids.js";
import { jsonValueEnd } from "./json-scan.js";
import type { ChatDelta, ChatDeltaShaper, ToolCallChunk } from "./stream-types.js";

/**
 * `{"name": "<name>", "arguments": ` as the grammar writes it (its properties in this order), after
 * the previous call's closing brace and comma when there is one.
 */
const CALL_HEAD = /^(?:\s*\})?\s*,?\s*\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"arguments"\s*:\s*/;

interface CallProgress {
  readonly id: string;
  readonly name: string;
  readonly argsStart: number;
  /** Characters of the arguments already sent. */
  sent: number;
  done: boolean;
}

/**
 * Streams an answer generated under `toolCallConstraint` as OpenAI's tool-call deltas: each
 * call's id, type and name as soon as its name is generated, then its arguments as they are
 * generated (the raw JSON text, in pieces). The grammar fixes the shape, so the text is read
 * position by position; nothing of it is content.
 */
export class ConstrainedCallStream implements ChatDeltaShaper {
  #text = "";
  #scanned = 0;
  #array: boolean | undefined;
  readonly #calls: CallProgress[] = [];

  get calledTools(): boolean {
    return this.#calls.length > 0;
  }

  push(text: string): ChatDelta[] {
    this.#text += text;
    const chunks: ToolCallChunk[] = [];
    for (;;) {
      const current = this.#calls.at(-1);
      if (current && !current.done) {
        const end = jsonValueEnd(this.#text, current.argsStart);
        const upTo = end < 0 ? this.#text.length : end;
        const piece = this.#text.slice(current.argsStart + current.sent, upTo);
        if (piece !== "") chunks.push({ index: this.#calls.length - 1, function: { arguments: piece } });
        current.sent = upTo - current.argsStart;
        if (end < 0) break;
        current.done = true;
        this.#scanned = end;
        continue;
      }
      if (this.#array === undefined) {
        const lead = this.#text.trimStart();
        if (lead === "") break;
        this.#array = lead.startsWith("[");
        this.#scanned = this.#text.length - lead.length + (this.#array ? 1 : 0);
      }
      if (!this.#array && this.#calls.length > 0) break;
      const head = CALL_HEAD.exec(this.#text.slice(this.#scanned));
      if (!head) break;
      const call: CallProgress = {
        id: newToolCallId(),
        name: JSON.parse(`"${head[1]}"`) as string,
        argsStart: this.#scanned + head[0].length,
        sent: 0,
        done: false,
      };
      this.#calls.push(call);
      chunks.push({
        index: this.#calls.length - 1,
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: "" },
      });
    }
    return chunks.map((chunk) => ({ type: "tool-calls", calls: [chunk] }));
  }

  finish(): ChatDelta[] {
    // An answer cut short before any call's name is text the client should still see.
    if (this.#calls.length === 0 && this.#text.trim() !== "") return [{ type: "content", text: this.#text }];
    return [];
  }
}
