import {
  ArmatureError,
  type FinishReason,
  type GenerateRequest,
  type GenerateResponse,
  type KvEvent,
  SseLineReader,
} from "../../protocol/index.js";
import type { Engine, EngineInfo, EngineLoad, GenerateOptions } from "../engine.js";
import { completionBody } from "./completion-body.js";
import { checkTokenizerAgrees, type EngineTokenizer } from "./tokenizer-probe.js";

export interface LlamaServerEngineOptions {
  /** Where llama-server listens (`--engine-url`), e.g. `http://127.0.0.1:8080`. */
  readonly url: string;
  /** The GGUF llama-server runs, read here for its vocabulary, template and special tokens. */
  readonly tokenizer: EngineTokenizer;
  /** Tokens per block of the router's approximate index. Default 16. */
  readonly blockSize?: number;
  /** How long the start waits for llama-server to answer `/health` (it loads its model). Default 60 s. */
  readonly startTimeoutMs?: number;
  /** How often `/health` is asked while serving. Default 1 s. */
  readonly healthIntervalMs?: number;
}

/** llama-server's `GET /props`, the fields read. */
interface Props {
  readonly total_slots: number;
  readonly n_ctx: number;
  readonly chat_template: string | undefined;
}

/**
 * An unmodified llama.cpp `llama-server`, driven over HTTP: armature's worker is its sidecar. Tokens
 * in (`/completion` with the prompt as token ids), tokens out (`return_tokens`), streamed; a
 * cancelled request closes its connection, which stops llama-server's slot. The cache report is
 * llama-server's own (`timings.cache_n`). llama-server publishes no KV events, so the router predicts
 * its caches from what it sent where (the approximate index). While `/health` does not answer, new
 * requests are refused retryably (the frontend tries another worker) and a stream cut off by the
 * engine's death fails retryably too, so it moves to another worker with the tokens it has.
 */
export class LlamaServerEngine implements Engine {
  readonly info: EngineInfo;
  readonly #url: string;
  readonly #inflight = new Map<AbortController, { tokens: number }>();
  readonly #slots: number;
  readonly #healthTimer: NodeJS.Timeout;
  #healthy = true;
  #closed = false;

  private constructor(url: string, info: EngineInfo, slots: number, healthIntervalMs: number) {
    this.#url = url;
    this.info = info;
    this.#slots = slots;
    this.#healthTimer = setInterval(() => void this.#checkHealth(), healthIntervalMs);
    this.#healthTimer.unref();
  }

  /**
   * Waits for llama-server to be healthy, reads its slots and context, and checks that the GGUF read
   * here tokenizes as llama-server does (a mismatch would make every block hash wrong).
   */
  static async connect(options: LlamaServerEngineOptions): Promise<LlamaServerEngine> {
    const url = engineUrl(options.url);
    await waitHealthy(url, options.startTimeoutMs ?? 60_000);
    const props = await readProps(url);
    await checkTokenizerAgrees(url, options.tokenizer);
    const blockSize = options.blockSize ?? 16;
    const { tokenizer } = options;
    const info: EngineInfo = {
      kind: "llama-server",
      backend: "llama-server",
      blockSize,
      totalKvBlocks: props.total_slots * Math.floor(props.n_ctx / blockSize),
      maxBatchedTokens: props.n_ctx,
      maxSequences: props.total_slots,
      contextLength: props.n_ctx,
      tokenizer: { kind: "gguf", path: tokenizer.path },
      chatTemplate: props.chat_template ?? tokenizer.chatTemplate,
      eosTokenIds: tokenizer.eosTokenIds,
      bosToken: tokenizer.bosToken,
      eosToken: tokenizer.eosToken,
      publishesKvEvents: false,
      engineUrl: url,
    };
    return new LlamaServerEngine(url, info, props.total_slots, options.healthIntervalMs ?? 1000);
  }

  async *generate(request: GenerateRequest, options: GenerateOptions): AsyncGenerator<GenerateResponse> {
    if (options.importedKv) throw new ArmatureError("NOT_SUPPORTED", "a llama-server worker serves aggregated only");
    const body = completionBody(request);
    if (this.#closed) throw new ArmatureError("ENGINE_CLOSED", `the llama-server worker for ${this.#url} is closed`);
    if (!this.#healthy) throw this.#unavailable("does not answer /health");
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    options.signal.addEventListener("abort", onAbort, { once: true });
    const state = { tokens: 0 };
    this.#inflight.set(controller, state);
    let finish: FinishReason | undefined;
    let cachedTokens = 0;
    try {
      const response = await fetch(`${this.#url}/completion`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify(body),
        signal: controller.signal,
      }).catch((cause: unknown) => {
        if (options.signal.aborted) return undefined;
        throw this.#unavailable(`refused the connection (${(cause as Error).message})`, cause);
      });
      if (!response) {
        finish = "cancelled";
      } else {
        if (!response.ok) throw await engineHttpError(this.#url, response);
        const reader = new SseLineReader();
        const decoder = new TextDecoder();
        try {
          for await (const piece of response.body as unknown as AsyncIterable<Uint8Array>) {
            for (const data of reader.push(decoder.decode(piece, { stream: true }))) {
              const chunk = parseChunk(this.#url, data);
              if (chunk.tokens.length > 0) {
                state.tokens += chunk.tokens.length;
                yield { type: "token-delta", tokenIds: chunk.tokens };
              }
              if (chunk.end) {
                finish = chunk.end.finishReason;
                cachedTokens = chunk.end.cachedTokens;
              }
            }
            if (finish) break;
          }
        } catch (error) {
          if (options.signal.aborted) finish = "cancelled";
          else if (error instanceof ArmatureError) throw error;
          else throw this.#unavailable(`cut the stream off (${(error as Error).message})`, error);
        }
        if (!finish) {
          if (options.signal.aborted) finish = "cancelled";
          else throw this.#unavailable("ended the stream without its last message");
        }
      }
    } finally {
      options.signal.removeEventListener("abort", onAbort);
      this.#inflight.delete(controller);
      // Closing the connection is how llama-server learns a request was cancelled.
      controller.abort();
    }
    yield {
      type: "request-end",
      finishReason: finish,
      promptTokens: request.tokenIds.length,
      completionTokens: state.tokens,
      cachedTokens,
    };
  }

  onKvEvents(_listener: (events: readonly KvEvent[]) => void): () => void {
    return () => {};
  }

  dumpKvEvents(): KvEvent[] {
    return [];
  }

  /** What this worker sent and has not seen end: llama-server runs `total_slots` of them at once. */
  load(): EngineLoad {
    const count = this.#inflight.size;
    return {
      activeRequests: Math.min(count, this.#slots),
      waitingRequests: Math.max(0, count - this.#slots),
      activeKvBlocks: 0,
      totalKvBlocks: this.info.totalKvBlocks,
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#healthTimer);
    for (const controller of this.#inflight.keys()) controller.abort();
  }

  async #checkHealth(): Promise<void> {
    this.#healthy = await isHealthy(this.#url, 2000);
  }

  #unavailable(what: string, cause?: unknown): ArmatureError {
    this.#healthy = false;
    return new ArmatureError("WORKER_UNAVAILABLE", `llama-server at ${this.#url} ${what}`, { retryable: true, cause });
  }
}

/** One parsed `/completion` stream message. */
interface Chunk {
  readonly tokens: readonly number[];
  readonly end?: { readonly finishReason: FinishReason; readonly cachedTokens: number } | undefined;
}

const STOP_TYPES: Readonly<Record<string, FinishReason>> = { eos: "stop", word: "stop", limit: "length" };

/** A stream message, checked: a body that is not llama-server's is an error naming the URL, never a crash. */
function parseChunk(url: string, data: string): Chunk {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw notLlamaServer(url, `a stream message that is not JSON: ${data.slice(0, 120)}`);
  }
  if (value === null || typeof value !== "object") throw notLlamaServer(url, `a stream message that is not an object`);
  const message = value as Record<string, unknown>;
  if (message.error !== undefined) {
    const error = message.error as { message?: unknown };
    throw new ArmatureError(
      "ENGINE_FAILED",
      `llama-server at ${url} failed the request: ${String(error.message ?? JSON.stringify(error))}`,
    );
  }
  const tokens = message.tokens ?? [];
  if (!Array.isArray(tokens) || !tokens.every((t) => Number.isInteger(t) && t >= 0)) {
    throw notLlamaServer(url, "a stream message whose tokens are not token ids");
  }
  if (message.stop !== true) return { tokens };
  const finishReason = STOP_TYPES[String(message.stop_type)];
  if (!finishReason) throw notLlamaServer(url, `a last message with stop_type ${JSON.stringify(message.stop_type)}`);
  const timings = message.timings as { cache_n?: unknown } | undefined;
  const cached = timings?.cache_n;
  return {
    tokens,
    end: { finishReason, cachedTokens: Number.isInteger(cached) && (cached as number) >= 0 ? (cached as number) : 0 },
  };
}

function notLlamaServer(url: string, what: string): ArmatureError {
  return new ArmatureError("ENGINE_FAILED", `llama-server at ${url} sent ${what}; is --engine-url a llama-server?`);
}

async function engineHttpError(url: string, response: Response): Promise<ArmatureError> {
  const text = await response.text().catch(() => "");
  let message = text.slice(0, 300);
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } };
    if (typeof parsed.error?.message === "string") message = parsed.error.message;
  } catch {}
  // 503: llama-server is loading or has no free slot; another worker may take it.
  return new ArmatureError("ENGINE_FAILED", `llama-server at ${url} answered ${response.status}: ${message}`, {
    retryable: response.status === 503,
  });
}

/** The `--engine-url`, checked and without a trailing slash. */
export function engineUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--engine-url must be an http(s) URL such as http://127.0.0.1:8080, got '${value}'`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ArmatureError("CONFIG_INVALID", `--engine-url must be an http(s) URL, got '${value}'`);
  }
  return url.href.replace(/\/+$/, "");
}

async function isHealthy(url: string, timeoutMs: number): Promise<boolean> {
  try {
    const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

async function waitHealthy(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await isHealthy(url, Math.max(1, Math.min(2000, deadline - Date.now())))) return;
    if (Date.now() >= deadline) {
      throw new ArmatureError(
        "CONFIG_INVALID",
        `--engine-url ${url}: llama-server did not answer GET /health with 200 within ${Math.round(timeoutMs / 1000)} s; is it started, and is this its address? (--engine-wait sets how long to wait)`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

async function readProps(url: string): Promise<Props> {
  let value: unknown;
  try {
    const response = await fetch(`${url}/props`, { signal: AbortSignal.timeout(5000) });
    value = await response.json();
  } catch (cause) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--engine-url ${url}: GET /props gave no JSON (${(cause as Error).message}); is it a llama-server?`,
      { cause },
    );
  }
  const props = value as { total_slots?: unknown; default_generation_settings?: { n_ctx?: unknown }; chat_template?: unknown };
  const slots = props.total_slots;
  const nCtx = props.default_generation_settings?.n_ctx;
  if (!Number.isInteger(slots) || (slots as number) < 1 || !Number.isInteger(nCtx) || (nCtx as number) < 1) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--engine-url ${url}: GET /props has no total_slots and default_generation_settings.n_ctx; is it a llama-server?`,
    );
  }
  return {
    total_slots: slots as number,
    n_ctx: nCtx as number,
    chat_template: typeof props.chat_template === "string" && props.chat_template !== "" ? props.chat_template : undefined,
  };
}
