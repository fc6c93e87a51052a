/**
 * Pulls tokens from llama.cpp's evaluation generator ahead of the consumer, up to `capacity`
 * buffered, so decoding the next token overlaps with the consumer's work on this one (streaming,
 * detokenizing, writing to the socket). Stops after `limit` tokens, or when told.
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

  async #run(onToken: (token: T) => void): Promise<void> {
    try {
      while (!this.#stopped && this.#produced < this.#limit) {
        if (this.#buffer.length >= this.#capacity) {
          await new Promise<void>((resolve) => {
            this.#wakeProducer = resolve;
          });
          continue;
        }
        const result = await this.#source.next();
        if (result.done) break;
        this.#produced++;
        onToken(result.value);
        this.#buffer.push(result.value);
        this.#wakeConsumer?.();
      }
    } catch (error) {
      this.#error = error;
    } finally {
      this.#done = true;
      this.#wakeConsumer?.();
      await this.#source.return?.(undefined);
    }
  }
}
