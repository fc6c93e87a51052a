import { ArmatureError } from "../../protocol/index.js";
import { llamaRuntime } from "../llamacpp/llama-runtime.js";
import { modelTokens } from "../llamacpp/model-tokens.js";

/** The model's own tokenizer as the worker reads it, with what its card needs. */
export interface EngineTokenizer {
  /** The GGUF the frontend loads too (the card's tokenizer). */
  readonly path: string;
  /** Plain text to token ids: no BOS, special-token text taken as text. */
  encode(text: string): readonly number[];
  readonly chatTemplate: string | undefined;
  readonly eosTokenIds: readonly number[];
  readonly bosToken: string | undefined;
  readonly eosToken: string | undefined;
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
  return { path, encode: (value) => model.tokenize(value, false) as number[], ...modelTokens(model) };
}

/** Words, digits, punctuation, accents, whitespace runs and special-token text, each a place tokenizers differ. */
export const PROBE_TEXT = "Hello, world! 1234567 tokens: ñandú café naïve\n\t  spaces <|im_start|>user end.";

/**
 * The router hashes the frontend's tokens, so they must be the engine's: the probe is tokenized here
 * and by the engine's `POST /tokenize` (whose body, with the probe in it, each engine words its own
 * way: `request`), and a difference stops the start, naming both token lists.
 */
export async function checkTokenizerAgrees(
  kind: string,
  url: string,
  tokenizer: EngineTokenizer,
  request: (probe: string) => Record<string, unknown>,
): Promise<void> {
  let remote: unknown;
  try {
    const response = await fetch(`${url}/tokenize`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(request(PROBE_TEXT)),
      signal: AbortSignal.timeout(5000),
    });
    remote = ((await response.json()) as { tokens?: unknown }).tokens;
  } catch (cause) {
    throw new ArmatureError("CONFIG_INVALID", `--engine-url ${url}: POST /tokenize failed (${(cause as Error).message})`, {
      cause,
    });
  }
  const local = tokenizer.encode(PROBE_TEXT);
  if (Array.isArray(remote) && remote.length === local.length && remote.every((t, i) => t === local[i])) return;
  throw new ArmatureError(
    "CONFIG_INVALID",
    `--model ${tokenizer.path} does not tokenize as the ${kind} at ${url} does: ${JSON.stringify(PROBE_TEXT)} is ${JSON.stringify(local)} here and ${JSON.stringify(remote)} there; give the worker the model file that ${kind} runs`,
  );
}
