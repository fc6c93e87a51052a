import { ArmatureError, type FinishReason } from "../../protocol/index.js";
import type { EngineInfo, EngineLoad } from "../engine.js";
import { type EngineServerConnection, EngineServerEngine, type StreamChunk } from "../engine-server/engine-server-engine.js";
import { engineUrl, getJson, metricValue, waitHealthy } from "../engine-server/engine-server-http.js";
import { tokenizerInfo } from "../engine-server/engine-tokenizer.js";
import { checkTokenizerAgrees } from "../engine-server/tokenizer-probe.js";
import { completionBody } from "./completion-body.js";
import { fixedAdapters, readLlamaServerAdapters } from "./llama-server-adapters.js";

/** llama-server's address (`--engine-url`); `blockSize`: the router's approximate index's (default 16). */
export interface LlamaServerEngineOptions extends EngineServerConnection {
  /** `--lora NAME=PATH`: names for the adapters llama-server loaded (default: their files' names). */
  readonly loras?: readonly { readonly name: string; readonly path: string }[] | undefined;
}

/**
 * An unmodified llama.cpp `llama-server` (docs/engines.md): the prompt goes to `/completion` as
 * token ids, the tokens come back as ids (`return_tokens`), the cache report is llama-server's own
 * (`timings.cache_n`). It publishes no KV events, so the router predicts its caches from what it
 * sent where (the approximate index). Waits for it to be healthy, reads its slots and context, and
 * checks that the GGUF read here tokenizes as llama-server does.
 */
export async function connectLlamaServer(options: LlamaServerEngineOptions): Promise<EngineServerEngine> {
  const url = engineUrl(options.url);
  await waitHealthy("llama-server", url, options.startTimeoutMs ?? 60_000);
  const props = readProps(url, await getJson("llama-server", url, "/props"));
  await checkTokenizerAgrees("llama-server", url, options.tokenizer, (content) => ({
    content,
    add_special: false,
    parse_special: true,
  }));
  const blockSize = options.blockSize ?? 16;
  const { tokenizer } = options;
  const adapters = await readLlamaServerAdapters(url, options.loras ?? []);
  const info: EngineInfo = {
    kind: "llama-server",
    backend: "llama-server",
    blockSize,
    totalKvBlocks: props.slots * Math.floor(props.nCtx / blockSize),
    maxBatchedTokens: props.nCtx,
    maxSequences: props.slots,
    contextLength: props.nCtx,
    ...tokenizerInfo(tokenizer),
    chatTemplate: props.chatTemplate ?? tokenizer.chatTemplate,
    publishesKvEvents: false,
    engineUrl: url,
  };
  return new EngineServerEngine({
    url,
    info,
    slots: props.slots,
    healthIntervalMs: options.healthIntervalMs,
    adapters: fixedAdapters(adapters),
    dialect: {
      kind: "llama-server",
      path: "/completion",
      body: (request) => completionBody(request, adapters),
      parse: (data) => parseLlamaServerChunk(url, data),
    },
  });
}

const STOP_TYPES: Readonly<Record<string, FinishReason>> = { eos: "stop", word: "stop", limit: "length" };

/** One `/completion` stream message: token ids, and on the last (`stop: true`) the stop type and cache report. */
export function parseLlamaServerChunk(url: string, data: string): StreamChunk {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw notLlamaServer(url, `a stream message that is not JSON: ${data.slice(0, 120)}`);
  }
  if (value === null || typeof value !== "object") throw notLlamaServer(url, "a stream message that is not an object");
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
  const cached = (message.timings as { cache_n?: unknown } | undefined)?.cache_n;
  return {
    tokens,
    finishReason,
    cachedTokens: Number.isInteger(cached) && (cached as number) >= 0 ? (cached as number) : 0,
    done: true,
  };
}

/**
 * llama-server's own count of what it runs and defers (its `/metrics`, with `--metrics`): other
 * clients' requests too. Without `--metrics` (501), nothing: the worker's own count stands.
 */
export async function readLlamaServerLoad(url: string): Promise<Partial<EngineLoad> | undefined> {
  const response = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(2000) });
  if (!response.ok) {
    await response.body?.cancel();
    return undefined;
  }
  return parseLlamaServerMetrics(await response.text());
}

export function parseLlamaServerMetrics(text: string): Partial<EngineLoad> {
  const gauge = (name: string) => metricValue(text, `llamacpp:${name}`);
  const processing = gauge("requests_processing");
  const deferred = gauge("requests_deferred");
  return {
    ...(Number.isFinite(processing) ? { activeRequests: processing } : {}),
    ...(Number.isFinite(deferred) ? { waitingRequests: deferred } : {}),
  };
}

function notLlamaServer(url: string, what: string): ArmatureError {
  return new ArmatureError("ENGINE_FAILED", `llama-server at ${url} sent ${what}; is --engine-url a llama-server?`);
}

/** `GET /props`: the slots, each slot's context, the chat template. */
function readProps(url: string, value: unknown): { slots: number; nCtx: number; chatTemplate: string | undefined } {
  const props = value as { total_slots?: unknown; default_generation_settings?: { n_ctx?: unknown }; chat_template?: unknown };
  const slots = props?.total_slots;
  const nCtx = props?.default_generation_settings?.n_ctx;
  if (!Number.isInteger(slots) || (slots as number) < 1 || !Number.isInteger(nCtx) || (nCtx as number) < 1) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--engine-url ${url}: GET /props has no total_slots and default_generation_settings.n_ctx; is it a llama-server?`,
    );
  }
  return {
    slots: slots as number,
    nCtx: nCtx as number,
    chatTemplate: typeof props.chat_template === "string" && props.chat_template !== "" ? props.chat_template : undefined,
  };
}
