import type { GenerateResponse, RequestEnd } from "../protocol/index.js";
import { type Delivery, deliver, type StreamSink } from "../runtime/index.js";

/** Opens a routed call's stream into a sink: the call starts, its responses are pushed as they come. */
export type OpenStream = (sink: StreamSink<GenerateResponse>) => Delivery;

/** A stream of one item: a request that ended in its prefill. */
export function once(end: RequestEnd): OpenStream {
  return (sink) => deliver(oneItem(end), sink);
}

async function* oneItem(end: RequestEnd): AsyncGenerator<GenerateResponse> {
  yield end;
}

/** Passes a stream through, telling `onEnd` about its `request-end`. */
export function tapEnd(open: OpenStream, onEnd: (end: RequestEnd) => void): OpenStream {
  return (sink) =>
    open({
      get holding() {
        return sink.holding;
      },
      push: (item) => {
        if (item.type === "request-end") onEnd(item);
        sink.push(item);
      },
      end: () => sink.end(),
      fail: (error) => sink.fail(error),
    });
}

/**
 * Wraps a worker's stream: each item is checked (`check` throws on a malformed one, and the call is
 * then cancelled and its sink failed), `release` runs exactly once when it ends, fails or is
 * stopped, and `firstToken` on its first token.
 */
export function tracked(
  open: (sink: StreamSink<unknown>) => Delivery,
  release: () => void,
  firstToken: () => void,
  check: (item: unknown) => GenerateResponse,
): OpenStream {
  return (sink) => {
    const checked = new CheckedSink(sink, release, firstToken, check);
    const delivery = open(checked);
    return {
      stop: async () => {
        checked.releaseOnce();
        await delivery.stop();
      },
    };
  };
}

class CheckedSink implements StreamSink<unknown> {
  readonly #down: StreamSink<GenerateResponse>;
  readonly #release: () => void;
  readonly #firstToken: () => void;
  readonly #check: (item: unknown) => GenerateResponse;
  #released = false;
  #sawToken = false;

  constructor(
    down: StreamSink<GenerateResponse>,
    release: () => void,
    firstToken: () => void,
    check: (item: unknown) => GenerateResponse,
  ) {
    this.#down = down;
    this.#release = release;
    this.#firstToken = firstToken;
    this.#check = check;
  }

  get holding(): Promise<void> | undefined {
    return this.#down.holding;
  }

  push(item: unknown): void {
    const response = this.#check(item);
    if (!this.#sawToken && response.type === "token-delta") {
      this.#sawToken = true;
      this.#firstToken();
    }
    this.#down.push(response);
  }

  end(): void {
    this.releaseOnce();
    this.#down.end();
  }

  fail(error: unknown): void {
    this.releaseOnce();
    this.#down.fail(error);
  }

  releaseOnce(): void {
    if (this.#released) return;
    this.#released = true;
    this.#release();
  }
}
