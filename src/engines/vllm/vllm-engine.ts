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
import { ServerAdapters, VLLM_ADAPTER_ROUTES } from "../engine-server/server-adapters.js";
import { checkTokenizerAgrees } from "../engine-server/tokenizer-probe.js";
import { readsStructuredOutputs, type VllmServer, vllmCompletionBody, vllmPrefillBody } from "./vllm-completion-body.js";

/**
 * `vllm serve`'s address (`--engine-url`), its publisher (`--kv-events-config`'s `endpoint`); a
 * `blockSize` given is checked against vLLM's resolved one.
 */
export interface VllmEngineOptions extends EngineServerConnection, EngineKvEventsOptions {
  /** `priority`: the vLLM was started with `--scheduling-policy priority`, so requests carry their priority to it. */
  readonly schedulingPolicy?: "fcfs" | "priority" | undefined;
}

const FINISH: Readonly<Record<string, FinishReason>> = { stop: "stop", length: "length", abort: "cancelled" };

/**
 * An unmodified `vllm serve`, driven on its OpenAI `/v1/completions` with token ids in and out
 * (`return_token_ids`), its prefix cache followed through its ZMQ KV events (both encodings), its
 * load read from its Prometheus `/metrics`. Its block size is vLLM's resolved one
 * (`vllm:cache_config_info`); a `--block-size` that differs stops the start.
 */
export async function connectVllm(options: VllmEngineOptions): Promise<EngineServerEngine> {
  const url = engineUrl(options.url);
  await waitHealthy("vllm", url, options.startTimeoutMs ?? 60_000);
  const models = (await getJson("vllm", url, "/v1/models")) as {
    data?: { id?: unknown; max_model_len?: unknown; parent?: unknown }[];
  };
  // The served model has no parent; its LoRA adapters name it as theirs.
  const card = models.data?.find((entry) => entry.parent === undefined || entry.parent === null) ?? models.data?.[0];
  if (typeof card?.id !== "string")
    throw new ArmatureError("CONFIG_INVALID", `--engine-url ${url}: GET /v1/models lists no model; is it a vllm?`);
  const cache = await readCacheConfig(url);
  if (options.blockSize !== undefined && options.blockSize !== cache.blockSize) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--block-size ${options.blockSize}: the vllm at ${url} stores blocks of ${cache.blockSize} tokens (vllm:cache_config_info); leave --block-size out or give ${cache.blockSize}`,
    );
  }
  const model = card.id;
  await checkTokenizerAgrees("vllm", url, options.tokenizer, (prompt) => ({ model, prompt, add_special_tokens: false }));
  const version = await readVersion(url);
  const server: VllmServer = {
    model: card.id,
    version,
    structuredOutputs: readsStructuredOutputs(version),
    priorityScheduling: options.schedulingPolicy === "priority",
  };
  const contextLength = Number.isInteger(card.max_model_len) ? (card.max_model_len as number) : 4096;
  const { tokenizer } = options;
  const info: EngineInfo = {
    kind: "vllm",
    backend: "vllm",
    blockSize: cache.blockSize,
    totalKvBlocks: cache.blocks,
    maxBatchedTokens: contextLength,
    maxSequences: 256,
    contextLength,
    ...tokenizerInfo(tokenizer),
    publishesKvEvents: options.kvEventsEndpoint !== undefined,
    engineUrl: url,
  };
  const engine = new EngineServerEngine({
    url,
    info,
    dialect: vllmDialect(url, server),
    adapters: new ServerAdapters(
      url,
      VLLM_ADAPTER_ROUTES,
      (models.data ?? []).flatMap((entry) => (entry.parent === server.model && typeof entry.id === "string" ? [entry.id] : [])),
    ),
    slots: 256,
    healthIntervalMs: options.healthIntervalMs,
    readLoad: (at) => readVllmLoad(at, cache.blocks),
  });
  engine.followKvEvents(options, cache.blockSize);
  return engine;
}

/** vLLM's version as `GET /version` gives it; `undefined` where it does not answer so. */
async function readVersion(url: string): Promise<string | undefined> {
  try {
    const answer = (await getJson("vllm", url, "/version")) as { version?: unknown } | null;
    return typeof answer?.version === "string" ? answer.version : undefined;
  } catch {
    return undefined;
  }
}

function vllmDialect(url: string, server: VllmServer): EngineServerDialect {
  return {
    kind: "vllm",
    path: "/v1/completions",
    body: (request, transferParams) => vllmCompletionBody(request, server, transferParams),
    parse: (data) => parseVllmChunk(url, data),
    prefill: {
      kind: "answered",
      body: (request) => vllmPrefillBody(request, server),
      parse: (answer) => parseVllmPrefill(url, answer),
    },
  };
}

/**
 * vLLM's answer to a prefill call: the first token, the cached prompt tokens, and the
 * `kv_transfer_params` its KV connector returned. Without them the engine runs no KV connector.
 */
export function parseVllmPrefill(
  url: string,
  answer: unknown,
): { firstToken: number | undefined; cachedTokens: number; params: Record<string, unknown> } {
  const message = answer as {
    choices?: { token_ids?: unknown }[];
    usage?: { prompt_tokens_details?: { cached_tokens?: unknown } | null } | null;
    kv_transfer_params?: unknown;
  } | null;
  if (message === null || typeof message !== "object" || !Array.isArray(message.choices)) {
    throw notVllm(url, "a prefill answer without choices");
  }
  const tokens = message.choices[0]?.token_ids;
  if (!Array.isArray(tokens) || !tokens.every((t) => Number.isInteger(t) && t >= 0)) {
    throw notVllm(url, "a prefill answer whose token_ids are not token ids");
  }
  const params = message.kv_transfer_params;
  if (params === null || typeof params !== "object" || Array.isArray(params)) {
    throw new ArmatureError(
      "ENGINE_FAILED",
      `vllm at ${url} returned no kv_transfer_params for a prefill: start it with a KV connector (--kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}')`,
    );
  }
  const cached = message.usage?.prompt_tokens_details?.cached_tokens;
  return {
    firstToken: tokens[0] as number | undefined,
    cachedTokens: Number.isInteger(cached) ? (cached as number) : 0,
    params: params as Record<string, unknown>,
  };
}

/** One chunk of vLLM's completion stream: token ids and finish reason, then usage, then `[DONE]`. */
export function parseVllmChunk(url: string, data: string): StreamChunk {
  const value = streamMessage("vllm", url, data);
  if (value === undefined) return { tokens: [], done: true };
  const message = value as {
    choices?: { token_ids?: unknown; finish_reason?: unknown }[];
    usage?: { prompt_tokens_details?: { cached_tokens?: unknown } | null } | null;
    error?: { message?: unknown };
  };
  if (message === null || typeof message !== "object") throw notVllm(url, "a stream message that is not an object");
  if (message.error)
    throw new ArmatureError("ENGINE_FAILED", `vllm at ${url} failed the request: ${String(message.error.message)}`);
  if (!Array.isArray(message.choices)) throw notVllm(url, "a stream message without choices");
  const choice = message.choices[0];
  const tokens = choice?.token_ids ?? [];
  if (!Array.isArray(tokens) || !tokens.every((t) => Number.isInteger(t) && t >= 0)) {
    throw notVllm(url, "a chunk whose token_ids are not token ids (is vLLM older than 0.10, without return_token_ids?)");
  }
  const reason = choice?.finish_reason;
  const finishReason = reason === null || reason === undefined ? undefined : FINISH[String(reason)];
  if (reason !== null && reason !== undefined && !finishReason) throw notVllm(url, `a finish_reason ${JSON.stringify(reason)}`);
  const cached = message.usage?.prompt_tokens_details?.cached_tokens;
  return { tokens, finishReason, ...(Number.isInteger(cached) ? { cachedTokens: cached as number } : {}) };
}

function notVllm(url: string, what: string): ArmatureError {
  return new ArmatureError("ENGINE_FAILED", `vllm at ${url} sent ${what}`);
}

/** `vllm:cache_config_info`'s labels: the resolved block size and the KV blocks on the device. */
async function readCacheConfig(url: string): Promise<{ blockSize: number; blocks: number }> {
  const text = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5000) })
    .then((r) => r.text())
    .catch(() => "");
  const line = /^vllm:cache_config_info\{([^}]*)\}/m.exec(text)?.[1] ?? "";
  const label = (name: string) => Number(new RegExp(`${name}="(\\d+)"`).exec(line)?.[1]);
  const blockSize = label("block_size");
  const blocks = label("num_gpu_blocks");
  if (!Number.isInteger(blockSize) || blockSize < 1) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--engine-url ${url}: GET /metrics has no vllm:cache_config_info with a block_size; is it a vllm?`,
    );
  }
  return { blockSize, blocks: Number.isInteger(blocks) ? blocks : 0 };
}

async function readVllmLoad(url: string, totalBlocks: number): Promise<Partial<EngineLoad> | undefined> {
  const text = await (await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(2000) })).text();
  const gauge = (name: string) => metricValue(text, `vllm:${name}`);
  const running = gauge("num_requests_running");
  const waiting = gauge("num_requests_waiting");
  const usage = gauge("kv_cache_usage_perc");
  return {
    ...(Number.isFinite(running) ? { activeRequests: running } : {}),
    ...(Number.isFinite(waiting) ? { waitingRequests: waiting } : {}),
    ...(Number.isFinite(usage) ? { activeKvBlocks: Math.round(usage * totalBlocks) } : {}),
  };
}
