import { Worker } from "node:worker_threads";

// The thread's program, plain JavaScript so it runs whatever loads the TypeScript of the main
// thread: it loads the GGUF's vocabulary (no weights) with node-llama-cpp and tokenizes on request.
const THREAD_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const describe = (error) => (error && error.message) || String(error);
(async () => {
  const { getLlama, LlamaLogLevel } = await import(workerData.nodeLlamaCpp);
  const llama = await getLlama({ gpu: false, build: "never", maxThreads: 1, logLevel: LlamaLogLevel.error, progressLogs: false });
  const model = await llama.loadModel({ modelPath: workerData.path, vocabOnly: true });
  parentPort.on("message", ({ id, text, special }) => {
    try {
      const tokens = Uint32Array.from(model.tokenize(text, special));
      parentPort.postMessage({ id, tokens }, [tokens.buffer]);
    } catch (error) {
      parentPort.postMessage({ id, error: describe(error) });
    }
  });
  parentPort.postMessage({ ready: true });
})().catch((error) => parentPort.postMessage({ failed: describe(error) }));
`;

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
 * A worker thread that tokenizes with a GGUF's vocabulary, so a long prompt is tokenized off the
 * event loop (llama.cpp's tokenizer is synchronous: 100,000 tokens hold a loop for about 100 ms,
 * every running stream's tokens with it). Loading node-llama-cpp in a thread takes seconds; it never
 * keeps the process alive.
 */
export class TokenizerThread {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  readonly #started: Promise<void>;
  #nextId = 0;
  #ready = false;
  #failure: Error | undefined;

  constructor(ggufPath: string) {
    this.#worker = new Worker(THREAD_SOURCE, {
      eval: true,
      workerData: { path: ggufPath, nodeLlamaCpp: import.meta.resolve("node-llama-cpp") },
    });
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
        return this.#fail(new Error(`the tokenizer thread could not load ${ggufPath}: ${message.failed}`), failed);
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
