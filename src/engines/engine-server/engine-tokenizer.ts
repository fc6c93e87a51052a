import { ArmatureError, type TokenizerSource } from "../../protocol/index.js";
import type { EngineInfo } from "../engine.js";
import { HfTokenizer } from "../huggingface/hf-tokenizer.js";
import { llamaRuntime } from "../llamacpp/llama-runtime.js";
import { modelTokens } from "../llamacpp/model-tokens.js";

/** The model's own tokenizer as a sidecar worker reads it, with what its card needs. */
export interface EngineTokenizer {
  /** What the frontend loads too (the card's tokenizer). */
  readonly source: TokenizerSource;
  /** The flag it came from, for messages: `--model model.gguf`, `--tokenizer DIR`. */
  readonly flag: string;
  /** Text to token ids: no BOS, special-token text read as its token. */
  encode(text: string): readonly number[];
  readonly chatTemplate: string | undefined;
  readonly eosTokenIds: readonly number[];
  readonly bosToken: string | undefined;
  readonly eosToken: string | undefined;
}

/** What a sidecar's card says of its tokenizer. */
export function tokenizerInfo(
  tokenizer: EngineTokenizer,
): Pick<EngineInfo, "tokenizer" | "chatTemplate" | "eosTokenIds" | "bosToken" | "eosToken"> {
  return {
    tokenizer: tokenizer.source,
    chatTemplate: tokenizer.chatTemplate,
    eosTokenIds: tokenizer.eosTokenIds,
    bosToken: tokenizer.bosToken,
    eosToken: tokenizer.eosToken,
  };
}

/** Reads the vocabulary of the GGUF at `path` (no weights). */
export async function ggufEngineTokenizer(path: string): Promise<EngineTokenizer> {
  const llama = await llamaRuntime();
  let model: Awaited<ReturnType<typeof llama.loadModel>>;
  try {
    model = await llama.loadModel({ modelPath: path, vocabOnly: true });
  } catch (cause) {
    throw new ArmatureError("MODEL_LOAD_FAILED", `--model ${path}: cannot read its vocabulary (${(cause as Error).message})`, {
      cause,
    });
  }
  return {
    source: { kind: "gguf", path },
    flag: `--model ${path}`,
    encode: (value) => model.tokenize(value, true) as number[],
    ...modelTokens(model),
  };
}

/**
 * Reads a Hugging Face tokenizer folder (`--tokenizer DIR`: `tokenizer.json`, `tokenizer_config.json`,
 * the chat template, `generation_config.json`). Generation ends at the end-of-sequence token and at
 * every id `generation_config.json` lists, as vLLM stops.
 */
export function hfEngineTokenizer(path: string): EngineTokenizer {
  const tokenizer = HfTokenizer.load(path);
  const { folder } = tokenizer;
  const eos = folder.eosToken === undefined ? undefined : tokenizer.tokenId(folder.eosToken);
  const eosTokenIds = [...new Set([...(eos === undefined ? [] : [eos]), ...folder.generationEosIds])];
  if (eosTokenIds.length === 0) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--tokenizer ${path}: no end-of-sequence token (tokenizer_config.json's eos_token, generation_config.json's eos_token_id)`,
    );
  }
  return {
    source: { kind: "huggingface", path },
    flag: `--tokenizer ${path}`,
    encode: (value) => tokenizer.encode(value),
    chatTemplate: folder.chatTemplate,
    eosTokenIds,
    bosToken: folder.bosToken,
    eosToken: folder.eosToken,
  };
}
