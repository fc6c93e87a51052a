import type { Logger } from "../observability/index.js";
import type { Generation, GenerationEnd, GenerationEvent } from "./generation.js";
import { type HttpError, toHttpError } from "./http-errors.js";
import type { SseWriter } from "./sse-writer.js";

/** A piece of generated text, with its tokens' log-probabilities when asked for. */
export type TextEvent = Exclude<GenerationEvent, GenerationEnd>;

/**
 * What one API writes for a streamed generation, in its own wire shape: the events before the
 * first token, those for each piece of text, those that close the stream, and the one that reports
 * a failure after the stream began. The driver (`streamGeneration`) does the rest, the same for
 * every API.
 */
export interface StreamShape {
  /** `event: <type>` before each event's data (Anthropic's and the Responses streams), else data only. */
  readonly named: boolean;
  /** `data: [DONE]` ends the stream (OpenAI's streams); else it ends after its last event. */
  readonly doneMarker: boolean;
  start(): readonly unknown[];
  text(event: TextEvent): readonly unknown[];
  end(end: GenerationEnd): readonly unknown[];
  error(error: HttpError): readonly unknown[];
}

/**
 * Streams a generation as server-sent events: the shape's start events, its events for each piece
 * of text as it comes (each written in the turn it arrives, waiting only while the socket is
 * full), then its closing events sent together. A failure after the stream began is logged and
 * sent as the shape's error event; a client that left ends the stream quietly. Resolves with how
 * the generation ended, or undefined when it did not.
 */
export async function streamGeneration(
  generation: Generation,
  sse: SseWriter,
  shape: StreamShape,
  log: Logger,
): Promise<GenerationEnd | undefined> {
  const write = (event: unknown): Promise<void> | undefined =>
    shape.named ? sse.sendEvent((event as { type: string }).type, event) : sse.send(event);
  /** Writes the events; a promise only once the socket's buffer is full (a token's write costs none). */
  const send = (events: readonly unknown[], from = 0): Promise<void> | undefined => {
    for (let i = from; i < events.length; i++) {
      const full = write(events[i]);
      if (full) return full.then(() => send(events, i + 1));
    }
    return undefined;
  };
  const finish = async (): Promise<void> => {
    if (shape.doneMarker) await sse.done();
    else sse.end();
  };
  try {
    await send(shape.start());
    for await (const event of generation.events) {
      if (sse.closed) return undefined;
      if (event.type === "text") {
        const full = send(shape.text(event));
        if (full) await full;
        continue;
      }
      sse.cork(); // the closing events go out together; ending the response uncorks
      await send(shape.end(event));
      await finish();
      return event;
    }
    return undefined;
  } catch (error) {
    // The client left (logged at info when it did): nothing failed here and no one is listening.
    if (sse.closed) return undefined;
    log.error({ err: error }, "stream failed after it started");
    await send(shape.error(toHttpError(error)));
    await finish();
    return undefined;
  }
}
