import type { ServerResponse } from "node:http";
import type { Logger } from "../../observability/index.js";
import type { GenerationEnd } from "../generation.js";
import { toHttpError } from "../http-errors.js";
import { sendJson } from "../http-io.js";
import { chatLogprobs, completionLogprobs, type TokenLogprobEntry } from "../logprobs-format.js";
import { SseWriter } from "../sse-writer.js";
import type { ChoiceEvent, Choices } from "./choices.js";
import type { ResponseIdentity } from "./openai-format.js";

type Kind = "chat" | "text";

export interface ChoicesResponseOptions {
  readonly stream: boolean;
  readonly includeUsage: boolean;
  /** Whether the client asked for log-probabilities (`logprobs` is null otherwise). */
  readonly logprobs: boolean;
  /** Choices in the response (prompts × n); each gets its role chunk first when streamed. */
  readonly choiceCount: number;
}

/**
 * Sends a multi-choice response (`n` > 1, a batch of prompts, `echo`, `logprobs`) as OpenAI shapes it:
 * one object with `choices[index]`, or a stream whose chunks each carry one choice's `index`,
 * interleaved as the choices produce text. Returns the end, or undefined when cut short.
 */
export async function sendChoices(
  kind: Kind,
  choices: Choices,
  idn: ResponseIdentity,
  options: ChoicesResponseOptions,
  res: ServerResponse,
  headers: Record<string, string>,
  log: Logger,
): Promise<GenerationEnd | undefined> {
  return options.stream
    ? streamChoices(kind, choices.events, idn, options, res, headers, log)
    : unaryChoices(kind, choices.events, idn, options, res, headers);
}

interface Collected {
  text: string;
  entries: TokenLogprobEntry[];
  finishReason: "stop" | "length";
}

async function unaryChoices(
  kind: Kind,
  events: AsyncIterable<ChoiceEvent>,
  idn: ResponseIdentity,
  options: ChoicesResponseOptions,
  res: ServerResponse,
  headers: Record<string, string>,
): Promise<GenerationEnd | undefined> {
  const collected: Collected[] = Array.from({ length: options.choiceCount }, () => ({
    text: "",
    entries: [],
    finishReason: "stop",
  }));
  for await (const event of events) {
    if (event.type === "end") {
      const body = {
        id: idn.id,
        object: kind === "chat" ? "chat.completion" : "text_completion",
        created: idn.created,
        model: idn.model,
        choices: collected.map((c, index) => choiceBody(kind, index, c, options.logprobs)),
        usage: event.usage,
      };
      sendJson(res, 200, body, headers);
      return event;
    }
    const choice = collected[event.index] as Collected;
    if (event.type === "finish") choice.finishReason = event.finishReason;
    else {
      choice.text += event.text;
      if (event.logprobs) choice.entries.push(...event.logprobs);
    }
  }
  return undefined;
}

function choiceBody(kind: Kind, index: number, c: Collected, withLogprobs: boolean) {
  if (kind === "chat") {
    return {
      index,
      message: { role: "assistant" as const, content: c.text, refusal: null },
      logprobs: withLogprobs ? chatLogprobs(c.entries) : null,
      finish_reason: c.finishReason,
    };
  }
  return {
    index,
    text: c.text,
    logprobs: withLogprobs ? completionLogprobs(c.entries, 0) : null,
    finish_reason: c.finishReason,
  };
}

async function streamChoices(
  kind: Kind,
  events: AsyncIterable<ChoiceEvent>,
  idn: ResponseIdentity,
  options: ChoicesResponseOptions,
  res: ServerResponse,
  headers: Record<string, string>,
  log: Logger,
): Promise<GenerationEnd | undefined> {
  const sse = new SseWriter(res, headers);
  const object = kind === "chat" ? "chat.completion.chunk" : "text_completion";
  const chunk = (choice: Record<string, unknown>): unknown => ({
    id: idn.id,
    object,
    created: idn.created,
    model: idn.model,
    choices: [choice],
    ...(options.includeUsage ? { usage: null } : {}),
  });
  /** Per choice: the completion text's length so far (legacy `text_offset`). */
  const offsets = new Array<number>(options.choiceCount).fill(0);
  try {
    if (kind === "chat") {
      for (let index = 0; index < options.choiceCount; index++) {
        await sse.send(chunk({ index, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }));
      }
    }
    for await (const event of events) {
      if (sse.closed) return undefined;
      if (event.type === "text") {
        const entries = event.logprobs;
        if (kind === "chat") {
          const logprobs = options.logprobs && entries ? chatLogprobs(entries) : null;
          await sse.send(chunk({ index: event.index, delta: { content: event.text }, logprobs, finish_reason: null }));
        } else {
          const start = offsets[event.index] ?? 0;
          const logprobs = options.logprobs && entries ? completionLogprobs(entries, start) : null;
          offsets[event.index] = start + (entries ?? []).reduce((sum, e) => sum + e.token.length, 0);
          await sse.send(chunk({ index: event.index, text: event.text, logprobs, finish_reason: null }));
        }
      } else if (event.type === "finish") {
        const body = kind === "chat" ? { delta: {} } : { text: "" };
        await sse.send(chunk({ index: event.index, ...body, logprobs: null, finish_reason: event.finishReason }));
      } else {
        sse.cork(); // the usage chunk and [DONE] go out together; done() uncorks
        if (options.includeUsage) {
          await sse.send({ id: idn.id, object, created: idn.created, model: idn.model, choices: [], usage: event.usage });
        }
        await sse.done();
        return event;
      }
    }
    return undefined;
  } catch (error) {
    if (sse.closed) return undefined;
    const http = toHttpError(error);
    log.error({ err: error }, "stream failed after it started");
    await sse.send({ error: http.body.error });
    await sse.done();
    return undefined;
  }
}
