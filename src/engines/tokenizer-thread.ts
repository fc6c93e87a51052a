import { Worker } from "node:worker_threads";

// The thread's program, plain JavaScript so it runs whatever loads the TypeScript of the main
// thread: it loads the tokenizer (a GGUF's vocabulary with node-llama-cpp, no weights; or a Hugging
// Face folder's tokenizer.json with @huggingface/tokenizers) and tokenizes on request.
const THREAD_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const describe = (error) => (error && error.message) || String(error);
async function load() {
  if (workerData.kind === "gguf") {
    const { getLlama, LlamaLogLevel } = await import(workerData.module);
    const llama = await getLlama({ gpu: false, build: "never", maxThreads: 1, logLevel: LlamaLogLevel.error, progressLogs: false });
    const model = await llama.loadModel({ modelPath: workerData.path, vocabOnly: true });
    return (text, special) => model.tokenize(text, special);
  }
  const { readFileSync } = require("node:fs");
  const { join } = require("node:path");
  const { Tokenizer } = await import(workerData.module);
  const read = (name) => JSON.parse(readFileSync(join(workerData.path, name), "utf8"));
  const tokenizer = new Tokenizer(read("tokenizer.json"), read("tokenizer_config.json"));
  return (text, special) => {
    if (!special) throw new Error("a Hugging Face tokenizer always reads special-token text as its token");
    return tokenizer.encode(text, { add_special_tokens: false }).ids;
  };
}
(async () => {
  const tokenize = await load();
  parentPort.on("message", ({ id, text, special }) => {
    try {
      const tokens = Uint32Array.from(tokenize(text, special));
      parentPort.postMessage({ id, tokens }, [tokens.buffer]);
    } catch (error) {
      parentPort.postMessage({ id, error: describe(error) });
    }
  });
  parentPort.postMessage({ ready: true });
})().catch((error) => parentPort.postMessage({ failed: describe(error) }));
`;

/** What a tokenizing thread loads: a GGUF's vocabulary, or a Hugging Face tokenizer folder. */
export interface ThreadTokenizerSource {
  readonly kind: "gguf" | "huggingface";
  readonly path: string;
}

interface Pending {
  readonly resolve: (tokens: number[]) => void;
  readonly reject: (error: Error) => void;
}

type ThreadMessage =
  | { readonly ready: true }
  | { readonly failed: string }
  | { readonly id: number; readonly tokens: Uint32Array }
  | { readonly id: number; readonly error: string };

/**
 * A worker thread that tokenizes with a model's tokenizer, so a long prompt is tokenized off the
 * event loop (tokenizers are synchronous: llama.cpp's holds a loop about 100 ms for 100,000 tokens,
 * tokenizers.js about 0.6 µs a character, every running stream's tokens with it). Loading the
 * tokenizer in a thread takes seconds; it never keeps the process alive.
 */
export class TokenizerThread {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  readonly #started: Promise<void>;
  #nextId = 0;
  #ready = false;
  #failure: Error | undefined;

  constructor(source: ThreadTokenizerSource) {
    const module = import.meta.resolve(source.kind === "gguf" ? "node-llama-cpp" : "@huggingface/tokenizers");
    this.#worker = new Worker(THREAD_SOURCE, { eval: true, workerData: { kind: source.kind, path: source.path, module } });
    this.#worker.unref();
    let started!: () => void;
    let failed!: (error: Error) => void;
    this.#started = new Promise<void>((resolve, reject) => {
      started = resolve;
      failed = reject;
    });
    this.#started.catch(() => {});
    this.#worker.on("message", (message: ThreadMessage) => {
      if ("ready" in message) {
        this.#ready = true;
        return started();
      }
      if ("failed" in message)
        return this.#fail(new Error(`the tokenizer thread could not load ${source.path}: ${message.failed}`), failed);
      const pending = this.#pending.get(message.id);
      if (!pending) return;
      this.#pending.delete(message.id);
      if ("tokens" in message) pending.resolve(Array.from(message.tokens));
      else pending.reject(new Error(message.error));
    });
    this.#worker.on("error", (error) => this.#fail(error, failed));
    this.#worker.on("exit", (code) => this.#fail(new Error(`the tokenizer thread exited (code ${code})`), failed));
  }

  /** Whether the thread has loaded its vocabulary and takes texts. */
  get ready(): boolean {
    return this.#ready && this.#failure === undefined;
  }

  /** Resolves once the thread is ready; rejects if it cannot start. */
  started(): Promise<void> {
    return this.#started;
  }

  /** Why the thread cannot tokenize, once it cannot (it failed to start, or died). */
  get failure(): Error | undefined {
    return this.#failure;
  }

  async encode(text: string, special: boolean): Promise<number[]> {
    await this.#started;
    if (this.#failure) throw this.#failure;
    const id = this.#nextId++;
    return new Promise<number[]>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#worker.postMessage({ id, text, special });
    });
  }

  async close(): Promise<void> {
    await this.#worker.terminate();
  }

  #fail(error: Error, failStart: (error: Error) => void): void {
    this.#failure ??= error;
    failStart(error);
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}

/**
 * Texts at least this long are tokenized on another thread: llama.cpp's tokenizer takes 0.2–0.5 µs
 * a character here and tokenizers.js about 0.6 (bench/tokenize-off-loop.ts), so below this a text
 * holds the event loop for a few milliseconds at most.
 */
export const OFF_LOOP_CHARACTERS = 8192;

/**
 * Tokenizes long texts on a `TokenizerThread` holding the same tokenizer, short ones (and every text
 * while the thread starts, or should it fail: a process warning says why) with `encodeHere`.
 */
export class OffLoopEncoder {
  readonly #source: ThreadTokenizerSource;
  readonly #encodeHere: (text: string, special: boolean) => number[];
  #thread: TokenizerThread | undefined;

  constructor(source: ThreadTokenizerSource, encodeHere: (text: string, special: boolean) => number[]) {
    this.#source = source;
    this.#encodeHere = encodeHere;
  }

  async encode(text: string, special: boolean): Promise<number[]> {
    if (text.length < OFF_LOOP_CHARACTERS) return this.#encodeHere(text, special);
    const thread = this.#start();
    if (!thread.ready) return this.#encodeHere(text, special);
    try {
      return await thread.encode(text, special);
    } catch (error) {
      if (!thread.failure) throw error;
      return this.#encodeHere(text, special);
    }
  }

  /** Resolves true once long texts go to the thread (starting it), false where they cannot. */
  async ready(): Promise<boolean> {
    try {
      await this.#start().started();
      return true;
    } catch {
      return false;
    }
  }

  /** Stops the thread, if one started. */
  async close(): Promise<void> {
    await this.#thread?.close();
  }

  #start(): TokenizerThread {
    if (this.#thread) return this.#thread;
    const thread = new TokenizerThread(this.#source);
    thread.started().catch((error: Error) => {
      process.emitWarning(`long prompts are tokenized on the event loop: ${error.message}`, "ArmatureWarning");
    });
    this.#thread = thread;
    return thread;
  }
}
