import type { GenerationEnd } from "../generation.js";
import type { TokenLogprobEntry } from "../logprobs-format.js";
import type { ChatToolCall, ToolCallChunk } from "../tool-calls/index.js";
import {
  deltaLogprobs,
  functionCallItem,
  type ItemStatus,
  messageItem,
  outputLogprobs,
  type ResponseIdentity,
  responseObject,
  statusOf,
  textPart,
} from "./responses-format.js";

/** A stream event: its `type` and fields, numbered in order. */
export type ResponsesEvent = { readonly type: string; readonly sequence_number: number } & Record<string, unknown>;

type OpenItem =
  | {
      readonly kind: "message";
      readonly id: string;
      readonly outputIndex: number;
      text: string;
      readonly logprobs: TokenLogprobEntry[];
    }
  | { readonly kind: "call"; readonly outputIndex: number; readonly call: { id: string; name: string; arguments: string } };

/**
 * The Responses stream of one answer, event by event, each numbered by `sequence_number` from 0:
 * `response.created`, `response.in_progress`, then each output item in turn (a message's
 * `output_item.added`, `content_part.added`, `output_text.delta`…, `output_text.done`,
 * `content_part.done`, `output_item.done`; a function call's `output_item.added`,
 * `function_call_arguments.delta`…, `function_call_arguments.done`, `output_item.done`), then
 * `response.completed` or `response.incomplete`. An item opens with its first text or call, and
 * closes when the next one opens or the answer ends.
 */
export class ResponsesEventStream {
  readonly #idn: ResponseIdentity;
  readonly #done: unknown[] = [];
  #open: OpenItem | undefined;
  #sequence = 0;

  constructor(idn: ResponseIdentity) {
    this.#idn = idn;
  }

  start(): ResponsesEvent[] {
    const response = responseObject(this.#idn, [], undefined);
    return [this.#event("response.created", { response }), this.#event("response.in_progress", { response })];
  }

  /** The events of the next piece of answer text, with its tokens' log-probabilities when asked for. */
  text(delta: string, logprobs: readonly TokenLogprobEntry[] = []): ResponsesEvent[] {
    const events = this.#open?.kind === "message" ? [] : [...this.#close("completed"), ...this.#openMessage()];
    const open = this.#open as Extract<OpenItem, { kind: "message" }>;
    open.text += delta;
    open.logprobs.push(...logprobs);
    events.push(this.#event("response.output_text.delta", { ...this.#at(open), delta, logprobs: deltaLogprobs(logprobs) }));
    return events;
  }

  /** The events of a piece of a tool call (its first piece carries its id and name). */
  call(chunk: ToolCallChunk): ResponsesEvent[] {
    const events: ResponsesEvent[] = [];
    if (chunk.id !== undefined || this.#open?.kind !== "call") {
      events.push(...this.#close("completed"));
      const call = { id: chunk.id ?? "", name: chunk.function.name ?? "", arguments: "" };
      this.#open = { kind: "call", outputIndex: this.#done.length, call };
      events.push(
        this.#event("response.output_item.added", {
          output_index: this.#open.outputIndex,
          item: this.#callItem(call, "in_progress"),
        }),
      );
    }
    const open = this.#open as Extract<OpenItem, { kind: "call" }>;
    if (chunk.function.arguments !== "") {
      open.call.arguments += chunk.function.arguments;
      events.push(
        this.#event("response.function_call_arguments.delta", {
          item_id: this.#callItem(open.call, "in_progress").id,
          output_index: open.outputIndex,
          delta: chunk.function.arguments,
        }),
      );
    }
    return events;
  }

  /** The closing events: the last item's, then `response.completed` or `response.incomplete`. */
  end(end: GenerationEnd): ResponsesEvent[] {
    const status = statusOf(end);
    const events = this.#done.length === 0 && !this.#open ? this.#openMessage() : [];
    events.push(...this.#close(status));
    const response = responseObject(this.#idn, this.#done, end);
    events.push(this.#event(status === "completed" ? "response.completed" : "response.incomplete", { response }));
    return events;
  }

  /** An `error` event, for a failure after the stream began. */
  error(error: { message: string; code: string | null; param: string | null }): ResponsesEvent {
    return this.#event("error", { code: error.code, message: error.message, param: error.param });
  }

  #openMessage(): ResponsesEvent[] {
    const outputIndex = this.#done.length;
    // Text after a call is a second message, with an id of its own.
    const id = outputIndex === 0 ? this.#idn.itemId : `${this.#idn.itemId}_${outputIndex}`;
    const open: OpenItem = { kind: "message", id, outputIndex, text: "", logprobs: [] };
    this.#open = open;
    return [
      this.#event("response.output_item.added", { output_index: outputIndex, item: messageItem(id, "in_progress", undefined) }),
      this.#event("response.content_part.added", { ...this.#at(open), part: textPart("") }),
    ];
  }

  #close(status: ItemStatus): ResponsesEvent[] {
    const open = this.#open;
    if (!open) return [];
    this.#open = undefined;
    if (open.kind === "message") {
      const item = messageItem(open.id, status, open.text, open.logprobs);
      this.#done.push(item);
      return [
        this.#event("response.output_text.done", { ...this.#at(open), text: open.text, logprobs: outputLogprobs(open.logprobs) }),
        this.#event("response.content_part.done", { ...this.#at(open), part: textPart(open.text, open.logprobs) }),
        this.#event("response.output_item.done", { output_index: open.outputIndex, item }),
      ];
    }
    const item = this.#callItem(open.call, "completed");
    this.#done.push(item);
    return [
      this.#event("response.function_call_arguments.done", {
        item_id: item.id,
        output_index: open.outputIndex,
        name: item.name,
        arguments: item.arguments,
      }),
      this.#event("response.output_item.done", { output_index: open.outputIndex, item }),
    ];
  }

  #callItem(call: { id: string; name: string; arguments: string }, status: ItemStatus) {
    const chatCall: ChatToolCall = { id: call.id, type: "function", function: { name: call.name, arguments: call.arguments } };
    return functionCallItem(chatCall, status);
  }

  #at(open: Extract<OpenItem, { kind: "message" }>) {
    return { item_id: open.id, output_index: open.outputIndex, content_index: 0 };
  }

  #event(type: string, fields: Record<string, unknown>): ResponsesEvent {
    return { type, ...fields, sequence_number: this.#sequence++ };
  }
}
