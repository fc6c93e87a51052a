import { randomInt } from "node:crypto";
import { ArmatureError, type FinishReason, type WorkerRole } from "../../protocol/index.js";
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
import { ServerAdapters, SGLANG_ADAPTER_ROUTES } from "../engine-server/server-adapters.js";
import { checkTokenizerAgrees } from "../engine-server/tokenizer-probe.js";
import { sglangGenerateBody } from "./sglang-generate-body.js";

/**
 * `sglang.launch_server`'s address (`--engine-url`), its publisher (`--kv-events-config` with
 * `"publisher": "zmq"`); a `blockSize` given is checked against SGLang's page size.
 */
export interface SglangEngineOptions extends EngineServerConnection, EngineKvEventsOptions {
  /**
   * The worker's role: `prefill` and `decode` need an SGLang started in that disaggregation mode
   * (`--disaggregation-mode`), `aggregated` one started without. Default aggregated.
   */
  readonly role?: WorkerRole | undefined;
  /** `--lora NAME=PATH`: adapters SGLang may have loaded at its start (its `--lora-paths NAME=PATH`); those it serves are the worker's. */
  readonly loras?: readonly { readonly name: string; readonly path: string }[] | undefined;
}

/** What the worker reads of SGLang's server arguments and state. */
interface ServerInfo {
  /** Tokens per KV page: the block size of its events. */
  readonly pageSize: number;
  /** KV capacity in tokens. */
  readonly totalTokens: number;
  readonly maxRunning: number;
  /** `--incremental-streaming-output` (formerly `--stream-output`): each message carries only its new tokens. */
  readonly incremental: boolean;
  /** `--disaggregation-mode`: `null` (whole requests), `prefill` or `decode`. */
  readonly mode: string;
  /** `--disaggregation-bootstrap-port` of a prefill server (default 8998). */
  readonly bootstrapPort: number;
}

/** The SGLang disaggregation mode each worker role needs. */
const MODE_OF_ROLE: Readonly<Record<WorkerRole, string>> = { aggregated: "null", prefill: "prefill", decode: "decode" };

/**
 * An unmodified SGLang server (`sglang.launch_server`), driven on its native `/generate` with token
 * ids in and out (`input_ids`, `output_ids`), its radix cache followed through its ZMQ KV events
 * (`--kv-events-config` with `"publisher": "zmq"`: the same wire as vLLM's, tagged arrays), its load
 * from `/metrics` (`--enable-metrics`). Its block size is its page size (`/server_info`); a
 * `--block-size` that differs stops the start. Streams in either of SGLang's modes are read: by
 * default each message repeats every token so far; with `--incremental-streaming-output` it holds
 * the new ones only. Prefill and decode workers drive servers in SGLang's disaggregation modes.
 */
export async function connectSglang(options: SglangEngineOptions): Promise<EngineServerEngine> {
  const url = engineUrl(options.url);
  await waitHealthy("sglang", url, options.startTimeoutMs ?? 60_000);
  const models = (await getJson("sglang", url, "/v1/models")) as { data?: { id?: unknown; max_model_len?: unknown }[] };
  const card = models?.data?.[0];
  if (typeof card?.id !== "string")
    throw new ArmatureError("CONFIG_INVALID", `--engine-url ${url}: GET /v1/models lists no model; is it an sglang?`);
  const server = await readServerInfo(url);
  if (options.blockSize !== undefined && options.blockSize !== server.pageSize) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--block-size ${options.blockSize}: the sglang at ${url} keeps its KV cache in pages of ${server.pageSize} tokens (--page-size); leave --block-size out or give ${server.pageSize}`,
    );
  }
  const role = options.role ?? "aggregated";
  if (server.mode !== MODE_OF_ROLE[role]) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--engine-url ${url}: ${role === "aggregated" ? "an" : "a"} ${role} worker needs an sglang started with --disaggregation-mode ${MODE_OF_ROLE[role]}, and this one runs in mode ${server.mode}`,
    );
  }
  const model = card.id;
  await checkTokenizerAgrees("sglang", url, options.tokenizer, (prompt) => ({ model, prompt, add_special_tokens: false }));
  const contextLength = Number.isInteger(card.max_model_len) ? (card.max_model_len as number) : 4096;
  const { tokenizer } = options;
  const totalBlocks = Math.floor(server.totalTokens / server.pageSize);
  const info: EngineInfo = {
    kind: "sglang",
    backend: "sglang",
    blockSize: server.pageSize,
    totalKvBlocks: totalBlocks,
    maxBatchedTokens: contextLength,
    maxSequences: server.maxRunning,
    contextLength,
    ...tokenizerInfo(tokenizer),
    publishesKvEvents: options.kvEventsEndpoint !== undefined,
    engineUrl: url,
  };
  const engine = new EngineServerEngine({
    url,
    info,
    dialect: sglangDialect(url, server),
    slots: server.maxRunning,
    healthIntervalMs: options.healthIntervalMs,
    readLoad: (at) => readSglangLoad(at, totalBlocks),
    adapters: new ServerAdapters(url, SGLANG_ADAPTER_ROUTES, await servedAdapters(url, options.loras ?? [])),
  });
  engine.followKvEvents(options, server.pageSize);
  return engine;
}

/**
 * Of the names `--lora` gives, those the SGLang at `url` serves, each checked with a one-token greedy
 * request naming it (SGLang lists no adapters); the caller refuses a name no server serves.
 */
async function servedAdapters(url: string, loras: readonly { readonly name: string }[]): Promise<string[]> {
  const served: string[] = [];
  for (const { name } of loras) {
    const response = await fetch(`${url}/generate`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input_ids: [0], sampling_params: { max_new_tokens: 1, temperature: 0 }, lora_path: name }),
      signal: AbortSignal.timeout(30_000),
    }).catch(() => undefined);
    if (response?.ok) served.push(name);
    await response?.body?.cancel();
  }
  return served;
}

/**
 * SGLang's dialect. Split requests follow its bootstrap protocol (its mini load balancer's): both
 * halves are the same body with the prefill server's `bootstrap_host` and `bootstrap_port` and a
 * random `bootstrap_room`, sent at once; the prefill server hands the KV to the decode server itself.
 */
function sglangDialect(url: string, server: ServerInfo): EngineServerDialect {
  const bootstrapHost = new URL(url).hostname.replace(/^\[(.*)\]$/, "$1");
  return {
    kind: "sglang",
    path: "/generate",
    body: (request, transferParams) => ({ ...sglangGenerateBody(request), ...transferParams }),
    parse: (data, emitted) => parseSglangChunk(url, data, server.incremental ? 0 : emitted),
    prefill: {
      kind: "concurrent",
      // A room below 2^53 stays exact in JSON numbers on both sides (SGLang takes 0 to 2^63 − 1).
      params: () => ({ bootstrap_host: bootstrapHost, bootstrap_port: server.bootstrapPort, bootstrap_room: randomInt(2 ** 47) }),
      body: (request, params) => ({ ...sglangGenerateBody({ ...request, disaggregation: undefined }), ...params }),
    },
  };
}

/**
 * One message of SGLang's `/generate` stream: `output_ids` (all so far, or the new ones: `skip` is
 * how many of them were read before), `meta_info` with `finish_reason` (null, or `{type: "stop" |
 * "length" | "abort", …}`) and `cached_tokens`; then `[DONE]`.
 */
export function parseSglangChunk(url: string, data: string, skip: number): StreamChunk {
  const value = streamMessage("sglang", url, data);
  if (value === undefined) return { tokens: [], done: true };
  const message = value as {
    output_ids?: unknown;
    meta_info?: { finish_reason?: unknown; cached_tokens?: unknown } | null;
    error?: { message?: unknown } | string;
  };
  if (message === null || typeof message !== "object") throw notSglang(url, "a stream message that is not an object");
  if (message.error) {
    const text = typeof message.error === "string" ? message.error : String(message.error.message);
    throw new ArmatureError("ENGINE_FAILED", `sglang at ${url} failed the request: ${text}`);
  }
  const ids = message.output_ids;
  if (!Array.isArray(ids) || !ids.every((t) => Number.isInteger(t) && t >= 0)) {
    throw notSglang(url, "a message whose output_ids are not token ids");
  }
  if (ids.length < skip)
    throw notSglang(url, `${ids.length} output_ids after ${skip} were read (is its streaming mode as it says?)`);
  const meta = message.meta_info;
  if (meta === null || typeof meta !== "object") throw notSglang(url, "a message without meta_info");
  const finishReason = finishOf(url, meta.finish_reason);
  const cached = meta.cached_tokens;
  return {
    tokens: skip === 0 ? ids : ids.slice(skip),
    finishReason,
    ...(Number.isInteger(cached) ? { cachedTokens: cached as number } : {}),
  };
}

const FINISH: Readonly<Record<string, FinishReason>> = { stop: "stop", length: "length", abort: "cancelled" };

function finishOf(url: string, reason: unknown): FinishReason | undefined {
  if (reason === null || reason === undefined) return undefined;
  const type = (reason as { type?: unknown }).type;
  const mapped = typeof type === "string" ? FINISH[type] : undefined;
  if (!mapped) throw notSglang(url, `a finish_reason ${JSON.stringify(reason)}`);
  if (mapped === "cancelled") {
    const why = (reason as { message?: unknown }).message;
    throw new ArmatureError("ENGINE_FAILED", `sglang at ${url} aborted the request${why ? `: ${String(why)}` : ""}`);
  }
  return mapped;
}

function notSglang(url: string, what: string): ArmatureError {
  return new ArmatureError("ENGINE_FAILED", `sglang at ${url} sent ${what}`);
}

/** `GET /server_info` (`/get_server_info` before SGLang 0.4.8): page size, KV tokens, running requests, streaming mode. */
async function readServerInfo(url: string): Promise<ServerInfo> {
  const read = (path: string) =>
    getJson("sglang", url, path).then(
      (value) => value as Record<string, unknown> | null,
      () => undefined,
    );
  let info = await read("/server_info");
  if (!Number.isInteger(info?.page_size)) info = await read("/get_server_info");
  const pageSize = info?.page_size;
  if (!Number.isInteger(pageSize) || (pageSize as number) < 1) {
    throw new ArmatureError("CONFIG_INVALID", `--engine-url ${url}: GET /server_info has no page_size; is it an sglang?`);
  }
  const total = info?.max_total_num_tokens;
  const running = info?.max_running_requests;
  return {
    pageSize: pageSize as number,
    totalTokens: Number.isInteger(total) ? (total as number) : 0,
    maxRunning: Number.isInteger(running) && (running as number) > 0 ? (running as number) : 256,
    incremental: info?.incremental_streaming_output === true || info?.stream_output === true,
    mode: typeof info?.disaggregation_mode === "string" ? info.disaggregation_mode : "null",
    bootstrapPort: Number.isInteger(info?.disaggregation_bootstrap_port) ? (info?.disaggregation_bootstrap_port as number) : 8998,
  };
}

/** SGLang's `/metrics` (with `--enable-metrics`), read; nothing where it is off. */
async function readSglangLoad(url: string, totalBlocks: number): Promise<Partial<EngineLoad> | undefined> {
  const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(2000) });
  if (!response.ok) return undefined;
  return sglangLoad(await response.text(), totalBlocks);
}

/** SGLang's gauges as a load: running and queued requests, the KV pool's used share in blocks. */
export function sglangLoad(text: string, totalBlocks: number): Partial<EngineLoad> {
  const gauge = (name: string) => metricValue(text, `sglang:${name}`);
  const running = gauge("num_running_reqs");
  const waiting = gauge("num_queue_reqs");
  const usage = gauge("token_usage");
  return {
    ...(Number.isFinite(running) ? { activeRequests: running } : {}),
    ...(Number.isFinite(waiting) ? { waitingRequests: waiting } : {}),
    ...(Number.isFinite(usage) ? { activeKvBlocks: Math.round(usage * totalBlocks) } : {}),
  };
}
