import { ArmatureError, type FinishReason } from "../../protocol/index.js";
import type { EngineInfo, EngineLoad } from "../engine.js";
import {
  type EngineKvEventsOptions,
  type EngineServerConnection,
  type EngineServerDialect,
  EngineServerEngine,
  type StreamChunk,
} from "../engine-server/engine-server-engine.js";
import { engineUrl, getJson, metricValue, streamMessage, waitHealthy } from "../engine-server/engine-server-http.js";
import { tokenizerInfo } from "../engine-server/engine-tokenizer.js";
import { TrtllmAdapters } from "./trtllm-adapters.js";
import { trtllmCompletionBody } from "./trtllm-completion-body.js";
import { TrtllmKvEventPoller } from "./trtllm-kv-event-poller.js";
import { checkTrtllmTokenizer } from "./trtllm-probe.js";

/**
 * `trtllm-serve`'s address (`--engine-url`) and its KV event publisher (`kv_cache_config.
 * kv_events_config`'s endpoint, KV cache manager V2); `blockSize` is checked against the
 * server's `tokens_per_block` where it says one, and is the block size where it does not.
 */
export interface TrtllmEngineOptions extends EngineServerConnection, EngineKvEventsOptions {
  /** `--lora NAME=PATH`: adapters the engine loads from PATH (on its host) when a request names them. */
  readonly loras?: readonly { readonly name: string; readonly path: string }[] | undefined;
  /** `--context-size`: the longest sequence the engine takes (TensorRT-LLM does not list it). */
  readonly contextLength?: number | undefined;
}

/** TensorRT-LLM's `tokens_per_block` default (`KvCacheConfig`). */
const DEFAULT_TOKENS_PER_BLOCK = 32;

/** The longest sequence assumed where `--context-size` is not given: the engine refuses longer ones itself. */
const DEFAULT_CONTEXT = 32_768;

/** A `--kv-events-endpoint` that names the pull route (`POST /kv_cache_events`) rather than a ZMQ publisher. */
const PULL_ROUTE = /^https?:\/\//;

const FINISH: Readonly<Record<string, FinishReason>> = { stop: "stop", length: "length", cancelled: "cancelled" };

/**
 * An unmodified `trtllm-serve`, driven on its OpenAI `/v1/completions` with token ids in (`prompt`)
 * and out (`detokenize: false`), its KV cache followed through its ZMQ KV events (the vLLM wire,
 * which TensorRT-LLM's KV cache manager V2 publishes) or its pull route, its load read from `/prometheus/metrics`
 * where it serves one (`return_perf_metrics`). Its block size is the server's `tokens_per_block`
 * (`GET /server_info`); a `--block-size` that differs stops the start.
 */
export async function connectTrtllm(options: TrtllmEngineOptions): Promise<EngineServerEngine> {
  const url = engineUrl(options.url);
  const pulled = options.kvEventsEndpoint !== undefined && PULL_ROUTE.test(options.kvEventsEndpoint);
  if (pulled && options.kvEventsReplayEndpoint !== undefined) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--kv-events-replay-endpoint: ${options.kvEventsEndpoint} is trtllm-serve's pull route, which has no replay; give a replay endpoint with a tcp:// publisher only`,
    );
  }
  await waitHealthy("trtllm", url, options.startTimeoutMs ?? 60_000);
  const models = (await getJson("trtllm", url, "/v1/models")) as { data?: { id?: unknown }[] } | null;
  const model = models?.data?.[0]?.id;
  if (typeof model !== "string")
    throw new ArmatureError("CONFIG_INVALID", `--engine-url ${url}: GET /v1/models lists no model; is it a trtllm-serve?`);
  const serverInfo = await readServerInfo(url);
  const blockSize = serverInfo.tokensPerBlock ?? options.blockSize ?? DEFAULT_TOKENS_PER_BLOCK;
  if (options.blockSize !== undefined && options.blockSize !== blockSize) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--block-size ${options.blockSize}: the trtllm-serve at ${url} stores blocks of ${blockSize} tokens (GET /server_info's tokens_per_block); leave --block-size out or give ${blockSize}`,
    );
  }
  await checkTrtllmTokenizer(url, model, options.tokenizer);
  const metrics = await readPrometheus(url);
  const totalBlocks = metrics === undefined ? Number.NaN : metricValue(metrics, "trtllm_kv_cache_max_blocks");
  const totalKvBlocks = Number.isFinite(totalBlocks) ? totalBlocks : 0;
  const slots = serverInfo.maxBatchSize ?? 256;
  const contextLength = options.contextLength ?? DEFAULT_CONTEXT;
  const info: EngineInfo = {
    kind: "trtllm",
    backend: "trtllm",
    blockSize,
    totalKvBlocks,
    maxBatchedTokens: contextLength,
    maxSequences: slots,
    contextLength,
    ...tokenizerInfo(options.tokenizer),
    publishesKvEvents: options.kvEventsEndpoint !== undefined,
    engineUrl: url,
  };
  const adapters = new TrtllmAdapters(options.loras ?? []);
  const dialect: EngineServerDialect = {
    kind: "trtllm",
    path: "/v1/completions",
    body: (request) => trtllmCompletionBody(request, { model, adapter: (name) => adapters.adapter(name) }),
    parse: (data) => parseTrtllmChunk(url, data),
  };
  const engine = new EngineServerEngine({
    url,
    info,
    dialect,
    adapters,
    slots,
    healthIntervalMs: options.healthIntervalMs,
    readLoad: metrics === undefined ? undefined : (at) => readTrtllmLoad(at),
  });
  followTrtllmKvEvents(engine, url, options, blockSize, pulled);
  return engine;
}

/**
 * The engine's KV events: a `tcp://` `--kv-events-endpoint` is its ZMQ publisher (KV cache manager
 * V2), read as vLLM's; an `http(s)://` one is its pull route (`POST /kv_cache_events`, every
 * version), read every 100 ms.
 */
function followTrtllmKvEvents(
  engine: EngineServerEngine,
  url: string,
  options: TrtllmEngineOptions,
  blockSize: number,
  pulled: boolean,
): void {
  const endpoint = options.kvEventsEndpoint;
  if (endpoint === undefined || !pulled) {
    engine.followKvEvents(options, blockSize);
    return;
  }
  const poller = new TrtllmKvEventPoller({
    url: endpoint,
    blockSize,
    onEvents: (events) => engine.emit(events),
    onDropped: (reason) => options.onDroppedEvents?.(reason),
    onFatal: (message) => process.emitWarning(`trtllm at ${url}: ${message}`, "ArmatureWarning"),
  });
  poller.start();
  engine.onClose(() => poller.close());
}

/**
 * One chunk of TensorRT-LLM's completion stream with `detokenize: false`: each choice's `token_ids`
 * are the ids new since the last chunk; the usage comes last in a chunk without choices, then
 * `[DONE]`. An error after the stream began comes as a chunk of its own (`{"error": {…}}`).
 */
export function parseTrtllmChunk(url: string, data: string): StreamChunk {
  const value = streamMessage("trtllm", url, data);
  if (value === undefined) return { tokens: [], done: true };
  const message = value as {
    choices?: { text?: unknown; token_ids?: unknown; finish_reason?: unknown }[];
    usage?: { prompt_tokens_details?: { cached_tokens?: unknown } | null } | null;
    error?: { message?: unknown } | null;
  } | null;
  if (message === null || typeof message !== "object") throw notTrtllm(url, "a stream message that is not an object");
  if (message.error)
    throw new ArmatureError("ENGINE_FAILED", `trtllm at ${url} failed the request: ${String(message.error.message)}`);
  if (!Array.isArray(message.choices)) throw notTrtllm(url, "a stream message without choices");
  const choice = message.choices[0];
  const tokens = choice === undefined ? [] : choice.token_ids;
  if (!Array.isArray(tokens) || !tokens.every((t) => Number.isInteger(t) && t >= 0)) {
    throw notTrtllm(url, "a chunk whose token_ids are not token ids (it did not take detokenize: false)");
  }
  const reason = choice?.finish_reason;
  const cached = message.usage?.prompt_tokens_details?.cached_tokens;
  return {
    tokens,
    finishReason: finishOf(url, reason),
    ...(Number.isInteger(cached) ? { cachedTokens: cached as number } : {}),
  };
}

function finishOf(url: string, reason: unknown): FinishReason | undefined {
  if (reason === null || reason === undefined) return undefined;
  if (reason === "timeout") throw new ArmatureError("ENGINE_FAILED", `trtllm at ${url} timed the request out`);
  const mapped = FINISH[String(reason)];
  if (!mapped) throw notTrtllm(url, `a finish_reason ${JSON.stringify(reason)}`);
  return mapped;
}

function notTrtllm(url: string, what: string): ArmatureError {
  return new ArmatureError("ENGINE_FAILED", `trtllm at ${url} sent ${what}`);
}

/** What the worker reads of `GET /server_info` (newer servers): tokens per KV block, the batch size. */
async function readServerInfo(url: string): Promise<{ tokensPerBlock?: number; maxBatchSize?: number }> {
  const info = await fetch(`${url}/server_info`, { signal: AbortSignal.timeout(5000) })
    .then((r) => (r.ok ? (r.json() as Promise<Record<string, unknown> | null>) : undefined))
    .catch(() => undefined);
  const positive = (value: unknown) => (Number.isInteger(value) && (value as number) > 0 ? (value as number) : undefined);
  const tokensPerBlock = positive(info?.tokens_per_block);
  const maxBatchSize = positive(info?.max_batch_size);
  return {
    ...(tokensPerBlock === undefined ? {} : { tokensPerBlock }),
    ...(maxBatchSize === undefined ? {} : { maxBatchSize }),
  };
}

/** `/prometheus/metrics` (served with `return_perf_metrics: true`); undefined where it is not. */
async function readPrometheus(url: string): Promise<string | undefined> {
  const response = await fetch(`${url}/prometheus/metrics`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
  if (!response?.ok) {
    await response?.body?.cancel();
    return undefined;
  }
  return response.text();
}

async function readTrtllmLoad(url: string): Promise<Partial<EngineLoad> | undefined> {
  const text = await readPrometheus(url);
  return text === undefined ? undefined : trtllmLoad(text);
}

/** TensorRT-LLM's gauges as a load: running and waiting requests, the KV blocks in use. */
export function trtllmLoad(text: string): Partial<EngineLoad> {
  const gauge = (name: string) => metricValue(text, `trtllm_${name}`);
  const running = gauge("num_requests_running");
  const waiting = gauge("num_requests_waiting");
  const used = gauge("kv_cache_used_blocks");
  return {
    ...(Number.isFinite(running) ? { activeRequests: running } : {}),
    ...(Number.isFinite(waiting) ? { waitingRequests: waiting } : {}),
    ...(Number.isFinite(used) ? { activeKvBlocks: used } : {}),
  };
}
