import type { GenerationEnd } from "../generation.js";
import type { ToolCallChunk } from "../tool-calls/index.js";
import { anthropicFormat, type MessageIdentity, toolUseId } from "./anthropic-format.js";

/** An Anthropic stream event: its `type` and fields. */
export type AnthropicEvent = { readonly type: string } & Record<string, unknown>;

/**
 * Anthropic's event stream of one answer: `message_start`, then each content block in turn (a
 * text block's `content_block_start`, `text_delta`s, `content_block_stop`; a `tool_use` block's
 * start with its id and name, `input_json_delta`s, stop), then `message_delta` (stop reason and
 * usage) and `message_stop`. A plain text answer opens its text block at once, as Anthropic's
 * documented stream does (`message_start`, `content_block_start`, `ping`, …); with tools in play a
 * block opens with its first text or call.
 */
export class AnthropicEventStream {
  readonly #idn: MessageIdentity;
  #index = -1;
  #open: "text" | "tool_use" | undefined;
  #calledTools = false;

  constructor(idn: MessageIdentity) {
    this.#idn = idn;
  }

  start(promptTokens: number, textAtOnce: boolean): AnthropicEvent[] {
    const events: AnthropicEvent[] = [anthropicFormat.messageStart(this.#idn, promptTokens)];
    if (textAtOnce) events.push(...this.#openText());
    events.push(anthropicFormat.ping);
    return events;
  }

  text(delta: string): AnthropicEvent[] {
    const events = this.#open === "text" ? [] : [...this.#close(), ...this.#openText()];
    events.push(anthropicFormat.textDelta(this.#index, delta));
    return events;
  }

  /** A piece of a tool call; its first piece carries its id and name. */
  call(chunk: ToolCallChunk): AnthropicEvent[] {
    const events: AnthropicEvent[] = [];
    if (chunk.id !== undefined || this.#open !== "tool_use") {
      events.push(...this.#close());
      this.#index++;
      this.#open = "tool_use";
      this.#calledTools = true;
      events.push(anthropicFormat.toolUseBlockStart(this.#index, toolUseId({ id: chunk.id ?? "" }), chunk.function.name ?? ""));
    }
    if (chunk.function.arguments !== "") events.push(anthropicFormat.inputJsonDelta(this.#index, chunk.function.arguments));
    return events;
  }

  end(end: GenerationEnd): AnthropicEvent[] {
    const events = this.#index < 0 ? this.#openText() : [];
    events.push(...this.#close(), anthropicFormat.messageDelta(end, this.#calledTools), anthropicFormat.messageStop);
    return events;
  }

  #openText(): AnthropicEvent[] {
    this.#index++;
    this.#open = "text";
    return [anthropicFormat.textBlockStart(this.#index)];
  }

  #close(): AnthropicEvent[] {
    if (this.#open === undefined) return [];
    this.#open = undefined;
    return [anthropicFormat.blockStop(this.#index)];
  }
}
