/**
 * Pulls tokens from llama.cpp's evaluation generator ahead of the consumer, up to `capacity`
 * buffered, so decoding the next token overlaps with the consumer's work on this one (streaming,
 * detokenizing, writing to the socket). Stops after `limit` tokens, or when told.
 *
 * The overlap needs an order: when a token arrives, the next one is asked for first (the generator
 * queues its decode, which the context dispatches in a microtask: `createContext`), and the token
 * is handed to a waiting consumer on `setImmediate`, after the microtasks that start that decode.
 * Handed over in the same turn, the consumer's work ran before the decode was dispatched and
 * added its whole time to every token's (docs/decisions/0030).
 */
export class TokenPump<T = number> {
  readonly #source: AsyncIterator<T>;
  readonly #capacity: number;
  readonly #limit: number;
  readonly #buffer: T[] = [];
  #produced = 0;
  #done = false;
  #error: unknown;
  #stopped = false;
  #wakeConsumer: (() => void) | undefined;
  #handOverScheduled = false;
  #wakeProducer: (() => void) | undefined;
  readonly #loop: Promise<void>;

  constructor(source: AsyncIterator<T>, options: { capacity: number; limit: number; onToken: (token: T) => void }) {
    this.#source = source;
    this.#capacity = options.capacity;
    this.#limit = options.limit;
    this.#loop = this.#run(options.onToken);
  }

  /** The next token, or `undefined` when the source ended, hit the limit or was stopped. */
  async next(): Promise<T | undefined> {
    while (this.#buffer.length === 0 && !this.#done) {
      await new Promise<void>((resolve) => {
        this.#wakeConsumer = resolve;
      });
    }
    if (this.#buffer.length > 0) {
      const token = this.#buffer.shift() as T;
      this.#wakeProducer?.();
      return token;
    }
    if (this.#error !== undefined) throw this.#error;
    return undefined;
  }

  /** Stops pulling and waits until the source is closed (the sequence is idle after this). */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wakeProducer?.();
    await this.#loop;
  }

  #wantsMore(): boolean {
    return !this.#stopped && this.#produced < this.#limit;
  }

  /** Wakes a waiting consumer on the next `setImmediate` (once, however many tokens arrive first). */
  #handOver(): void {
    if (this.#handOverScheduled || this.#wakeConsumer === undefined) return;
    this.#handOverScheduled = true;
    setImmediate(() => {
      this.#handOverScheduled = false;
      const wake = this.#wakeConsumer;
      this.#wakeConsumer = undefined;
      wake?.();
    });
  }

  async #run(onToken: (token: T) => void): Promise<void> {
    try {
      let pending = this.#wantsMore() ? this.#source.next() : undefined;
      while (pending !== undefined) {
        const result = await pending;
        pending = undefined;
        if (result.done) break;
        this.#produced++;
        onToken(result.value);
        this.#buffer.push(result.value);
        while (this.#wantsMore() && this.#buffer.length >= this.#capacity) {
          this.#handOver();
          await new Promise<void>((resolve) => {
            this.#wakeProducer = resolve;
          });
          this.#wakeProducer = undefined;
        }
        if (this.#wantsMore()) pending = this.#source.next();
        this.#handOver();
      }
    } catch (error) {
      this.#error = error;
    } finally {
      this.#done = true;
      this.#handOver();
      await this.#source.return?.(undefined);
    }
  }
}
