import {
  ArmatureError,
  type FinishReason,
  type GenerateRequest,
  type GenerateResponse,
  type KvEvent,
  SseLineReader,
} from "../../protocol/index.js";
import type {
  Engine,
  EngineAdapters,
  EngineInfo,
  EngineLoad,
  GenerateOptions,
  PrefillOptions,
  PrefillResult,
} from "../engine.js";
import { EngineKvEventStream } from "../zmq-kv-events/engine-kv-event-stream.js";
import { engineHttpError, isHealthy } from "./engine-server-http.js";
import type { EngineTokenizer } from "./engine-tokenizer.js";

/** One stream message of an engine server, read. */
export interface StreamChunk {
  readonly tokens: readonly number[];
  readonly finishReason?: FinishReason | undefined;
  readonly cachedTokens?: number | undefined;
  /** The last message: nothing follows. */
  readonly done?: boolean | undefined;
}

/** What differs from one engine server to the next: the route, the body, the stream's messages. */
export interface EngineServerDialect {
  /** `llama-server`, `vllm`: in messages and errors. */
  readonly kind: string;
  /** The streaming generation route, e.g. `/completion`. */
  readonly path: string;
  /**
   * The request body; throws `NOT_SUPPORTED` naming what the engine cannot do. `transferParams`:
   * the decode half of a split request, whose KV the engine pulls from its prefill peer with them.
   */
  body(request: GenerateRequest, transferParams?: Readonly<Record<string, unknown>>): Record<string, unknown>;
  /**
   * One SSE `data` payload, the request's `emitted` tokens already read (for engines whose messages
   * repeat every token so far); throws `ENGINE_FAILED` naming the URL on anything not the engine's.
   */
  parse(data: string, emitted: number): StreamChunk;
  /** Engines that prefill for a decode peer of their own kind (vLLM's NixlConnector, SGLang's bootstrap): the prefill call. */
  readonly prefill?: EnginePrefillDialect | undefined;
}

/**
 * The prefill half of a split request on an engine server that moves its KV to its peer itself:
 * - `answered` (vLLM's NixlConnector): the prefill call runs first; its answer holds the first token
 *   and the parameters its decode peer pulls the KV with;
 * - `concurrent` (SGLang's bootstrap): both halves carry the same parameters, chosen up front, and run
 *   at once (the prefill server waits for its peer); the prefill call is sent and not waited for.
 */
export type EnginePrefillDialect =
  | {
      readonly kind: "answered";
      /** The prefill call's body (one token, not streamed, asking the engine to keep the KV for a peer). */
      body(request: GenerateRequest): Record<string, unknown>;
      /** Its answer: the first token, the cached prompt tokens, the parameters the decode peer needs. */
      parse(answer: unknown): { firstToken: number | undefined; cachedTokens: number; params: Record<string, unknown> };
    }
  | {
      readonly kind: "concurrent";
      /** The parameters both halves carry (e.g. SGLang's bootstrap host, port and room). */
      params(request: GenerateRequest): Record<string, unknown>;
      /** The prefill call's body, with those parameters. */
      body(request: GenerateRequest, params: Readonly<Record<string, unknown>>): Record<string, unknown>;
    };

/** How long a concurrent prefill call may run unanswered before it is dropped (its peer never came). */
const CONCURRENT_PREFILL_MS = 120_000;

/** How a sidecar reaches its engine server, whatever its kind. */
export interface EngineServerConnection {
  /** Where the engine server listens (`--engine-url`), e.g. `http://127.0.0.1:8000`. */
  readonly url: string;
  /** The model's tokenizer as the worker reads it (`--tokenizer DIR`, or a GGUF `--model`). */
  readonly tokenizer: EngineTokenizer;
  /** `--block-size`: the router's block size, checked against the engine's own where it has one. */
  readonly blockSize?: number | undefined;
  /** How long the start waits for the engine's `/health` (it loads its model). Default 60 s. */
  readonly startTimeoutMs?: number | undefined;
  /** How often `/health` (and the engine's load) is asked while serving. Default 1 s. */
  readonly healthIntervalMs?: number | undefined;
}

/** An engine server's ZMQ KV event publisher, as a sidecar is told of it. */
export interface EngineKvEventsOptions {
  /** The publisher (`--kv-events-endpoint`: the engine's `endpoint`, with the host to reach). */
  readonly kvEventsEndpoint?: string | undefined;
  /** Its replay socket (`--kv-events-replay-endpoint`). */
  readonly kvEventsReplayEndpoint?: string | undefined;
  /** A KV event batch dropped (malformed, a gap not filled, another attention group's). */
  readonly onDroppedEvents?: ((reason: string) => void) | undefined;
}

/** The engine's own view of its load, where it publishes one (polled with its health). */
export type EngineLoadReader = (url: string) => Promise<Partial<EngineLoad> | undefined>;

export interface EngineServerEngineOptions {
  readonly url: string;
  readonly info: EngineInfo;
  readonly dialect: EngineServerDialect;
  /** Requests the engine runs at once (its slots, or sequences). */
  readonly slots: number;
  readonly healthIntervalMs?: number | undefined;
  readonly readLoad?: EngineLoadReader | undefined;
  /** The engine server's LoRA adapters, where armature drives them (vLLM). */
  readonly adapters?: EngineAdapters | undefined;
}

/**
 * An unmodified engine server driven over HTTP: armature's worker is its sidecar. Requests stream
 * tokens in and out through the dialect; a cancelled request closes its connection, which is how
 * engine servers learn of it. While `GET /health` does not answer, new requests are refused
 * retryably (the frontend takes another worker), and a stream cut off by the engine's death fails
 * retryably too, so it moves to another worker with the tokens it has. KV events, for engines that
 * publish them, arrive through `emit` (a ZMQ subscription owned by whoever made the engine).
 */
export class EngineServerEngine implements Engine {
  readonly info: EngineInfo;
  readonly adapters: EngineAdapters | undefined;
  /** Present where the dialect prefills for a decode peer (vLLM with a KV connector, SGLang in disaggregation mode). */
  readonly prefill?: (request: GenerateRequest, options: PrefillOptions) => Promise<PrefillResult>;
  readonly #o: EngineServerEngineOptions;
  readonly #inflight = new Set<AbortController>();
  readonly #listeners = new Set<(events: readonly KvEvent[]) => void>();
  readonly #healthTimer: NodeJS.Timeout;
  #reported: Partial<EngineLoad> | undefined;
  #healthy = true;
  #failedChecks = 0;
  #closed = false;
  #onClose: (() => Promise<void>) | undefined;

  constructor(options: EngineServerEngineOptions) {
    this.#o = options;
    this.info = options.info;
    this.adapters = options.adapters;
    const prefill = options.dialect.prefill;
    if (prefill) this.prefill = (request, prefillOptions) => this.#prefill(prefill, request, prefillOptions.signal);
    this.#healthTimer = setInterval(() => void this.#poll(), options.healthIntervalMs ?? 1000);
    this.#healthTimer.unref();
  }

  /** KV events from the engine, handed to the worker's listeners. */
  emit(events: readonly KvEvent[]): void {
    for (const listener of this.#listeners) listener(events);
  }

  /** Runs at `close` (stops what feeds `emit`). */
  onClose(hook: () => Promise<void>): void {
    this.#onClose = hook;
  }

  /**
   * Follows the engine's ZMQ KV events (where a publisher is given) into `emit`, with blocks of
   * `blockSize` tokens; the subscription ends at `close`. A block size the events contradict is said
   * once, loudly: every lookup would miss.
   */
  followKvEvents(options: EngineKvEventsOptions, blockSize: number): void {
    if (!options.kvEventsEndpoint) return;
    const { kind } = this.#o.dialect;
    const stream = new EngineKvEventStream({
      endpoint: options.kvEventsEndpoint,
      replayEndpoint: options.kvEventsReplayEndpoint,
      blockSize,
      onEvents: (events) => this.emit(events),
      onDropped: (reason) => options.onDroppedEvents?.(reason),
      onFatal: (message) => process.emitWarning(`${kind} at ${this.#o.url}: ${message}`, "ArmatureWarning"),
    });
    stream.start();
    this.onClose(() => stream.close());
  }

  async *generate(request: GenerateRequest, options: GenerateOptions): AsyncGenerator<GenerateResponse> {
    const { dialect, url } = this.#o;
    const imported = options.importedKv;
    if (imported && (imported.format !== "engine-transfer-params" || !dialect.prefill)) {
      throw new ArmatureError("NOT_SUPPORTED", `a ${dialect.kind} worker cannot decode from ${imported.format} KV`);
    }
    const body = dialect.body(request, imported?.format === "engine-transfer-params" ? imported.params : undefined);
    if (this.#closed) throw new ArmatureError("ENGINE_CLOSED", `the ${dialect.kind} worker for ${url} is closed`);
    if (!this.#healthy) throw this.#unavailable("does not answer /health");
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    options.signal.addEventListener("abort", onAbort, { once: true });
    this.#inflight.add(controller);
    let tokens = 0;
    let finish: FinishReason | undefined;
    let cachedTokens = 0;
    let done = false;
    try {
      const response = await fetch(`${url}${dialect.path}`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify(body),
        signal: controller.signal,
      }).catch((cause: unknown) => {
        if (options.signal.aborted) return undefined;
        throw this.#unavailable(`refused the connection (${(cause as Error).message})`, cause);
      });
      if (response && !response.ok) {
        const error = await engineHttpError(dialect.kind, url, response);
        // The engine could not pull the prefill peer's KV (expired, its peer gone): the worker prefills instead.
        if (imported)
          throw new ArmatureError("TRANSFER_FAILED", `${error.message} (decoding from a prefill peer's KV)`, { cause: error });
        throw error;
      }
      if (response) {
        const reader = new SseLineReader();
        const decoder = new TextDecoder();
        try {
          for await (const piece of response.body as unknown as AsyncIterable<Uint8Array>) {
            for (const data of reader.push(decoder.decode(piece, { stream: true }))) {
              const chunk = dialect.parse(data, tokens);
              if (chunk.tokens.length > 0) {
                tokens += chunk.tokens.length;
                yield { type: "token-delta", tokenIds: chunk.tokens };
              }
              finish = chunk.finishReason ?? finish;
              cachedTokens = chunk.cachedTokens ?? cachedTokens;
              done ||= chunk.done === true;
            }
            if (done) break;
          }
        } catch (error) {
          if (!options.signal.aborted) {
            if (error instanceof ArmatureError) throw error;
            throw this.#unavailable(`cut the stream off (${(error as Error).message})`, error);
          }
        }
      }
      if (options.signal.aborted) finish = "cancelled";
      else if (!finish) throw this.#unavailable("ended the stream without its last message");
    } finally {
      options.signal.removeEventListener("abort", onAbort);
      this.#inflight.delete(controller);
      // Closing the connection is how an engine server learns a request was cancelled.
      controller.abort();
    }
    yield {
      type: "request-end",
      finishReason: finish,
      promptTokens: request.tokenIds.length,
      completionTokens: tokens,
      cachedTokens,
    };
  }

  /** The prefill half: a call that leaves the prompt's KV in the engine for its decode peer. */
  async #prefill(prefill: EnginePrefillDialect, request: GenerateRequest, signal: AbortSignal): Promise<PrefillResult> {
    if (prefill.kind === "concurrent") return this.#prefillConcurrently(prefill, request);
    const { dialect, url } = this.#o;
    const body = prefill.body(request);
    if (this.#closed) throw new ArmatureError("ENGINE_CLOSED", `the ${dialect.kind} worker for ${url} is closed`);
    if (!this.#healthy) throw this.#unavailable("does not answer /health");
    const controller = new AbortController();
    const onAbort = () => controller.abort();
    signal.addEventListener("abort", onAbort, { once: true });
    this.#inflight.add(controller);
    try {
      const response = await fetch(`${url}${dialect.path}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-request-id": request.requestId },
        body: JSON.stringify(body),
        signal: controller.signal,
      }).catch((cause: unknown) => {
        if (signal.aborted) throw new ArmatureError("REQUEST_CANCELLED", "the prefill was cancelled", { cause });
        throw this.#unavailable(`refused the connection (${(cause as Error).message})`, cause);
      });
      if (!response.ok) throw await engineHttpError(dialect.kind, url, response);
      let answer: unknown;
      try {
        answer = await response.json();
      } catch (cause) {
        throw new ArmatureError("ENGINE_FAILED", `${dialect.kind} at ${url} answered the prefill with no JSON`, { cause });
      }
      const { firstToken, cachedTokens, params } = prefill.parse(answer);
      return {
        firstToken,
        cachedTokens,
        kv: firstToken === undefined ? undefined : { format: "engine-transfer-params", params, bytes: 0 },
      };
    } finally {
      signal.removeEventListener("abort", onAbort);
      this.#inflight.delete(controller);
    }
  }

  /**
   * Sends the prefill call and returns its parameters at once: the decode call, sent with them,
   * completes the pair. The prefill's own answer is read and dropped (its tokens are the decode's);
   * a call whose peer never comes is dropped after `CONCURRENT_PREFILL_MS`.
   */
  #prefillConcurrently(prefill: Extract<EnginePrefillDialect, { kind: "concurrent" }>, request: GenerateRequest): PrefillResult {
    const { dialect, url } = this.#o;
    const params = prefill.params(request);
    const body = prefill.body(request, params);
    if (this.#closed) throw new ArmatureError("ENGINE_CLOSED", `the ${dialect.kind} worker for ${url} is closed`);
    if (!this.#healthy) throw this.#unavailable("does not answer /health");
    const controller = new AbortController();
    this.#inflight.add(controller);
    const timer = setTimeout(() => controller.abort(), CONCURRENT_PREFILL_MS);
    timer.unref();
    void fetch(`${url}${dialect.path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: controller.signal,
    })
      .then((response) => response.arrayBuffer())
      .catch(() => undefined)
      .finally(() => {
        clearTimeout(timer);
        this.#inflight.delete(controller);
      });
    return { firstToken: undefined, cachedTokens: 0, kv: { format: "engine-transfer-params", params, bytes: 0 } };
  }

  onKvEvents(listener: (events: readonly KvEvent[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Engines that publish events cannot be asked for a dump; readers recover by replay instead. */
  dumpKvEvents(): KvEvent[] {
    return [];
  }

  /** What this worker sent and has not seen end, against the slots; the engine's own report where polled. */
  load(): EngineLoad {
    const count = this.#inflight.size;
    const slots = this.#o.slots;
    const reported = this.#reported;
    return {
      activeRequests: Math.max(Math.min(count, slots), reported?.activeRequests ?? 0),
      waitingRequests: Math.max(count - slots, reported?.waitingRequests ?? 0, 0),
      activeKvBlocks: reported?.activeKvBlocks ?? 0,
      totalKvBlocks: this.info.totalKvBlocks,
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#healthTimer);
    for (const controller of this.#inflight) controller.abort();
    await this.#onClose?.();
  }

  /**
   * Two checks in a row must fail before the engine counts as down: a server starved of CPU for a
   * moment answers one check late, and every request meanwhile would be refused. A request that
   * cannot reach it marks it down at once (`#unavailable`).
   */
  async #poll(): Promise<void> {
    const ok = await isHealthy(this.#o.url, 2000);
    this.#failedChecks = ok ? 0 : this.#failedChecks + 1;
    this.#healthy = ok || this.#failedChecks < 2;
    if (this.#healthy && this.#o.readLoad) this.#reported = await this.#o.readLoad(this.#o.url).catch(() => undefined);
  }

  #unavailable(what: string, cause?: unknown): ArmatureError {
    this.#healthy = false;
    return new ArmatureError("WORKER_UNAVAILABLE", `${this.#o.dialect.kind} at ${this.#o.url} ${what}`, {
      retryable: true,
      cause,
    });
  }
}
