import type { LlamaContext, LlamaModel } from "node-llama-cpp";
import { ArmatureError } from "../../protocol/index.js";

/** `--kv-cache-type`: the element type of the K and V caches. */
export type KvCacheType = "f16" | "q8_0";

/** Bytes per cached element, against F16's 2: q8_0 stores 32 elements in 34 bytes. */
export const KV_ELEMENT_BYTES: Readonly<Record<KvCacheType, number>> = { f16: 2, q8_0: 34 / 32 };

export interface ContextSettings {
  /** Tokens per sequence. */
  readonly contextSize: number;
  readonly sequences: number;
  readonly threads: number;
  readonly batchSize?: number | undefined;
  readonly flashAttention?: "auto" | "on" | "off" | undefined;
  readonly kvCacheType?: KvCacheType | undefined;
  /** A LoRA adapter GGUF applied to every sequence of the context. */
  readonly lora?: string | undefined;
}

/**
 * The generation context of a worker, with the hardware flags checked against what the model and
 * the llama.cpp build can honour: each one that cannot be is refused by name before anything is
 * allocated (node-llama-cpp would otherwise drop an unsupported flash attention without a word),
 * and a context llama.cpp refuses to create names the flags it was made with.
 */
export async function createContext(model: LlamaModel, settings: ContextSettings): Promise<LlamaContext> {
  const { contextSize, sequences, threads } = settings;
  const batchSize = settings.batchSize ?? Math.min(contextSize, 512);
  if (batchSize > contextSize) {
    throw flagError("batch-size", `${batchSize} is more than a sequence holds (--context-size ${contextSize})`);
  }
  const flash = settings.flashAttention ?? "auto";
  if (flash === "on" && !model.flashAttentionSupported) {
    throw flagError("flash-attention", "on: this model or llama.cpp build does not support flash attention");
  }
  const kvCacheType = settings.kvCacheType ?? "f16";
  if (kvCacheType !== "f16" && flash !== "on") {
    throw flagError(
      "kv-cache-type",
      `${kvCacheType} needs --flash-attention on: llama.cpp quantizes the V cache only with flash attention`,
    );
  }
  const headWidth = attentionHeadWidth(model.fileInfo.metadata);
  if (kvCacheType === "q8_0" && headWidth !== undefined && headWidth % 32 !== 0) {
    throw flagError(
      "kv-cache-type",
      `q8_0: this model's attention heads are ${headWidth} wide, and q8_0 stores blocks of 32 (f16 serves it)`,
    );
  }
  try {
    return await model.createContext({
      contextSize,
      sequences,
      threads,
      batchSize,
      flashAttention: flash === "auto" ? "auto" : flash === "on",
      // A queued decode is dispatched in a microtask, not on the next turn (node-llama-cpp's
      // default): the token pump hands each token over on `setImmediate`, so the next decode is
      // running on llama.cpp's thread while the server streams this token (decision 0030).
      batching: { dispatchSchedule: dispatchInMicrotask },
      ...(settings.lora === undefined ? {} : { lora: settings.lora }),
      ...(kvCacheType === "f16"
        ? {}
        : { experimentalKvCacheKeyType: "Q8_0" as const, experimentalKvCacheValueType: "Q8_0" as const }),
    });
  } catch (cause) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `llama.cpp could not create a context with --context-size ${contextSize}, --sequences ${sequences}, --batch-size ${batchSize}, --flash-attention ${flash}, --kv-cache-type ${kvCacheType}: ${(cause as Error).message}`,
      { cause },
    );
  }
}

function dispatchInMicrotask(dispatch: () => void): void {
  queueMicrotask(dispatch);
}

/** Elements per attention head of K (`attention.key_length`, else embedding width over heads). */
function attentionHeadWidth(metadata: unknown): number | undefined {
  const m = metadata as Record<string, unknown> & { general?: { architecture?: unknown } };
  const arch = m.general?.architecture;
  if (typeof arch !== "string") return undefined;
  const section = m[arch] as
    | { embedding_length?: unknown; attention?: { head_count?: unknown; key_length?: unknown } }
    | undefined;
  const keyLength = section?.attention?.key_length;
  if (typeof keyLength === "number") return keyLength;
  const width = section?.embedding_length;
  const heads = section?.attention?.head_count;
  return typeof width === "number" && typeof heads === "number" && heads > 0 ? width / heads : undefined;
}

function flagError(flag: string, message: string): ArmatureError {
  return new ArmatureError("CONFIG_INVALID", `--${flag} ${message}`);
}
