import type { Logger } from "../observability/index.js";
import type { Delivery, StreamSink } from "../runtime/index.js";
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
 * of text written in the turn the text arrives (the generation is delivered into this driver, no
 * promise per token), then its closing events sent together. While the socket's buffer is full
 * the generation is asked to hold, and what still arrives is written after the drain, in order. A
 * failure after the stream began is logged and sent as the shape's error event; a client that left
 * ends the stream quietly and cancels the generation. Resolves with how the generation ended, or
 * undefined when it did not.
 */
export async function streamGeneration(
  generation: Generation,
  sse: SseWriter,
  shape: StreamShape,
  log: Logger,
): Promise<GenerationEnd | undefined> {
  const driver = new SseDriver(sse, shape, log);
  const started = driver.write(shape.start());
  if (started) await started;
  return driver.run(generation);
}

class SseDriver implements StreamSink<GenerationEvent> {
  readonly #sse: SseWriter;
  readonly #shape: StreamShape;
  readonly #log: Logger;
  /** Set while the socket's buffer is full: what follows is written after it settles. */
  #full: Promise<void> | undefined;
  #settle!: (end: GenerationEnd | undefined) => void;
  #delivery: Delivery | undefined;
  /** The generation's last event (end, failure or cancellation) arrived: later ones are ignored. */
  #over = false;
  #settled = false;

  constructor(sse: SseWriter, shape: StreamShape, log: Logger) {
    this.#sse = sse;
    this.#shape = shape;
    this.#log = log;
  }

  get holding(): Promise<void> | undefined {
    return this.#full;
  }

  run(generation: Generation): Promise<GenerationEnd | undefined> {
    const done = new Promise<GenerationEnd | undefined>((resolve) => {
      this.#settle = (end) => {
        if (this.#settled) return;
        this.#settled = true;
        resolve(end);
      };
    });
    this.#delivery = generation.open(this);
    return done;
  }

  push(event: GenerationEvent): void {
    if (this.#over) return;
    if (this.#sse.closed) {
      this.#leave();
      return;
    }
    if (event.type === "text") {
      if (this.#full) this.#queue(() => this.write(this.#shape.text(event)));
      else this.#writeNow(event);
      return;
    }
    this.#over = true;
    this.#queue(() => {
      this.#sse.cork(); // the closing events go out together; ending the response uncorks
      this.write(this.#shape.end(event)); // corked: nothing waits
      this.#finish();
      this.#settle(event);
      return undefined;
    });
  }

  end(): void {
    // Ended without an end event: the generation was cancelled.
    if (this.#over) return;
    this.#over = true;
    this.#queue(() => {
      this.#settle(undefined);
      return undefined;
    });
  }

  fail(error: unknown): void {
    if (this.#over) return;
    this.#over = true;
    this.#queue(() => {
      this.#failed(error);
      return undefined;
    });
  }

  /** Sends the shape's error event and ends the stream (quietly when the client left), once. */
  #failed(error: unknown): void {
    if (this.#settled) return;
    // The client left (logged at info when it did): nothing failed here and no one is listening.
    if (!this.#sse.closed) {
      this.#log.error({ err: error }, "stream failed after it started");
      this.#sse.cork();
      this.write(this.#shape.error(toHttpError(error)));
      this.#finish();
    }
    this.#settle(undefined);
  }

  /** Writes the events; a promise only once the socket's buffer is full (a token's write costs none). */
  write(events: readonly unknown[], from = 0): Promise<void> | undefined {
    const shape = this.#shape;
    for (let i = from; i < events.length; i++) {
      const event = events[i];
      const full = shape.named ? this.#sse.sendEvent((event as { type: string }).type, event) : this.#sse.send(event);
      if (full) return full.then(() => this.write(events, i + 1));
    }
    return undefined;
  }

  /**
   * Runs `step` now, or after the writes waiting on a full socket. A step that throws (a shape
   * that cannot format an event) fails the stream as a worker's failure would, and cancels the
   * generation.
   */
  #queue(step: () => Promise<void> | undefined): void {
    const guarded = (): Promise<void> | undefined => {
      try {
        return step()?.catch((error: unknown) => this.#broke(error));
      } catch (error) {
        this.#broke(error);
        return undefined;
      }
    };
    const waiting = this.#full;
    const next = waiting ? waiting.then(guarded) : guarded();
    if (!next) return;
    const settled = next.then(() => {
      if (this.#full === settled) this.#full = undefined;
    });
    this.#full = settled;
  }

  /** A piece of text written in this turn (the common case: the socket takes it; no closure, no promise). */
  #writeNow(event: TextEvent): void {
    let full: Promise<void> | undefined;
    try {
      full = this.write(this.#shape.text(event));
    } catch (error) {
      this.#broke(error);
      return;
    }
    if (full) this.#queue(() => full);
  }

  #broke(error: unknown): void {
    this.#over = true;
    void this.#delivery?.stop();
    this.#failed(error);
  }

  #finish(): void {
    if (this.#shape.doneMarker) void this.#sse.done();
    else this.#sse.end();
  }

  /** The client left: the generation is cancelled and the stream ends quietly. */
  #leave(): void {
    this.#over = true;
    void this.#delivery?.stop();
    this.#settle(undefined);
  }
}
