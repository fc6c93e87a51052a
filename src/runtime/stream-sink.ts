/**
 * Where a stream's items go as they are produced. In one process a response's tokens cross every
 * layer between the engine and the socket as calls on sinks, in the turn they arrive, with no
 * promise per layer; an async iterator remains only where a stream is produced by a generator or
 * crosses a process (the NATS plane), and one pump (`deliver`) turns it into sink calls.
 *
 * The producer calls `push` for each item, then `end` or `fail` once; never after one of those,
 * and never after the consumer stopped the delivery.
 */
export interface StreamSink<T> {
  /** One item. A throw stops the delivery: the producer is cancelled, then `fail` gets the error. */
  push(item: T): void;
  /** The stream ended; no item follows. */
  end(): void;
  /** The stream failed; no item follows. */
  fail(error: unknown): void;
  /**
   * Set while the consumer cannot take more (its socket's buffer is full): a producer that can
   * wait holds its next item until this settles. Items pushed meanwhile are still taken.
   */
  readonly holding?: Promise<void> | undefined;
}

/** A stream being delivered into a sink. */
export interface Delivery {
  /**
   * Stops delivering early: the producer is cancelled and unwound; no sink call follows. Resolves
   * once the producer has unwound. After the stream ended or failed it does nothing.
   */
  stop(): Promise<void>;
}

/** Delivers `source` into `sink`, one item at a time, waiting while the sink is `holding`. */
export function deliver<T>(source: AsyncIterable<T>, sink: StreamSink<T>): Delivery {
  return new Pump(source[Symbol.asyncIterator](), sink);
}

/**
 * The one async hop of a delivery: awaits each item of the iterator and pushes it. Nothing is
 * pushed before the constructor returns (the first item needs at least one await).
 */
class Pump<T> implements Delivery {
  readonly #iterator: AsyncIterator<T>;
  #stopped = false;
  #finished = false;

  constructor(iterator: AsyncIterator<T>, sink: StreamSink<T>) {
    this.#iterator = iterator;
    void this.#run(sink);
  }

  async #run(sink: StreamSink<T>): Promise<void> {
    let result: { error: unknown } | undefined;
    try {
      for (;;) {
        const holding = sink.holding;
        if (holding) await holding;
        if (this.#stopped) return;
        const next = await this.#iterator.next();
        if (this.#stopped) return;
        if (next.done) break;
        try {
          sink.push(next.value);
        } catch (error) {
          this.#finished = true;
          await this.#iterator.return?.().catch(() => undefined);
          result = { error };
          break;
        }
      }
    } catch (error) {
      if (this.#stopped) return;
      result = { error };
    }
    this.#finished = true;
    if (result) sink.fail(result.error);
    else sink.end();
  }

  async stop(): Promise<void> {
    if (this.#stopped || this.#finished) return;
    this.#stopped = true;
    await this.#iterator.return?.();
  }
}

/** A wait a consumer asks its producer for, settled by `release`. */
class Hold {
  readonly promise: Promise<void>;
  release!: () => void;

  constructor() {
    this.promise = new Promise<void>((resolve) => {
      this.release = resolve;
    });
  }
}

/** Items an iterating consumer has not taken yet before the producer is asked to hold. */
const QUEUED_ITEMS = 16;

/**
 * Reads a delivery as an async iterable, for consumers that pull (a whole answer gathered, a
 * test). The delivery opens on the first `next()`; leaving early (`return`) stops it. At most
 * `QUEUED_ITEMS` wait unread before the producer is asked to hold.
 */
export function iterate<T>(open: (sink: StreamSink<T>) => Delivery): AsyncIterable<T> {
  return { [Symbol.asyncIterator]: () => new SinkQueue(open) };
}

class SinkQueue<T> implements StreamSink<T>, AsyncIterator<T> {
  readonly #open: (sink: StreamSink<T>) => Delivery;
  readonly #items: T[] = [];
  #delivery: Delivery | undefined;
  #outcome: { error: unknown } | "ended" | undefined;
  #wake: (() => void) | undefined;
  #hold: Hold | undefined;

  constructor(open: (sink: StreamSink<T>) => Delivery) {
    this.#open = open;
  }

  get holding(): Promise<void> | undefined {
    if (this.#items.length < QUEUED_ITEMS) return undefined;
    this.#hold ??= new Hold();
    return this.#hold.promise;
  }

  push(item: T): void {
    this.#items.push(item);
    this.#wake?.();
  }

  end(): void {
    this.#outcome ??= "ended";
    this.#wake?.();
  }

  fail(error: unknown): void {
    this.#outcome ??= { error };
    this.#wake?.();
  }

  async next(): Promise<IteratorResult<T>> {
    this.#delivery ??= this.#open(this);
    while (this.#items.length === 0 && this.#outcome === undefined) {
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
    if (this.#items.length > 0) {
      const value = this.#items.shift() as T;
      if (this.#hold && this.#items.length < QUEUED_ITEMS) {
        this.#hold.release();
        this.#hold = undefined;
      }
      return { done: false, value };
    }
    const outcome = this.#outcome;
    if (outcome !== "ended" && outcome !== undefined) {
      this.#outcome = "ended";
      throw outcome.error;
    }
    return { done: true, value: undefined };
  }

  async return(): Promise<IteratorResult<T>> {
    this.#outcome ??= "ended";
    this.#items.length = 0;
    this.#hold?.release();
    await this.#delivery?.stop();
    return { done: true, value: undefined };
  }
}

/**
 * Holds what a delivery pushes until a consumer attaches, then hands it on (the buffered items
 * first, in order) and passes everything after straight through. `first` settles on the first
 * item or the end (rejects on a failure before any item): a caller can wait for a stream to have
 * started before it commits to a response. Asks the producer to hold once `QUEUED_ITEMS` wait.
 */
export class AttachableSink<T> implements StreamSink<T> {
  readonly first: Promise<void>;
  #started!: () => void;
  #failedEarly!: (error: unknown) => void;
  #began = false;
  #buffered: T[] = [];
  #outcome: { error: unknown } | "ended" | undefined;
  #down: StreamSink<T> | undefined;
  #hold: Hold | undefined;

  constructor() {
    this.first = new Promise<void>((resolve, reject) => {
      this.#started = resolve;
      this.#failedEarly = reject;
    });
    // Whoever waits on `first` sees the failure; nobody waiting on it is not an unhandled one.
    this.first.catch(() => undefined);
  }

  get holding(): Promise<void> | undefined {
    if (this.#down) return this.#down.holding;
    if (this.#buffered.length < QUEUED_ITEMS) return undefined;
    this.#hold ??= new Hold();
    return this.#hold.promise;
  }

  push(item: T): void {
    this.#begin();
    if (this.#down) this.#down.push(item);
    else this.#buffered.push(item);
  }

  end(): void {
    this.#begin();
    if (this.#down) this.#down.end();
    else this.#outcome = "ended";
  }

  fail(error: unknown): void {
    if (!this.#began) {
      this.#began = true;
      this.#failedEarly(error);
    }
    if (this.#down) this.#down.fail(error);
    else this.#outcome = { error };
  }

  /** Hands what came so far to `down`, then everything that follows. Only one consumer attaches. */
  attach(down: StreamSink<T>): void {
    this.#down = down;
    const buffered = this.#buffered;
    this.#buffered = [];
    this.#hold?.release();
    this.#hold = undefined;
    for (const item of buffered) down.push(item);
    const outcome = this.#outcome;
    if (outcome === "ended") down.end();
    else if (outcome) down.fail(outcome.error);
  }

  #begin(): void {
    if (this.#began) return;
    this.#began = true;
    this.#started();
  }
}
