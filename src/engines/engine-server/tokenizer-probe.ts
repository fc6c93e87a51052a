import { ArmatureError } from "../../protocol/index.js";
import type { EngineTokenizer } from "./engine-tokenizer.js";

/** Words, digits, punctuation, accents, whitespace runs and special-token text, each a place tokenizers differ. */
export const PROBE_TEXT = "Hello, world! 1234567 tokens: ñandú café naïve\n\t  spaces <|im_start|>user end.";

/**
 * The router hashes the frontend's tokens, so they must be the engine's: the probe is tokenized here
 * and by the engine's `POST /tokenize` (whose body, with the probe in it, each engine words its own
 * way: `request`; special-token text is read as its token on both sides, as the frontend reads
 * prompts), and a difference stops the start, naming both token lists.
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
  if (Array.isArray(remote) && sameTokens(remote, local)) return;
  throw tokenizerMismatch(kind, url, tokenizer, local, remote);
}

export function sameTokens(a: readonly unknown[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((t, i) => t === b[i]);
}

/** The probe tokenized otherwise by the engine: the start stops, naming both token lists. */
export function tokenizerMismatch(
  kind: string,
  url: string,
  tokenizer: EngineTokenizer,
  local: unknown,
  remote: unknown,
): ArmatureError {
  return new ArmatureError(
    "CONFIG_INVALID",
    `${tokenizer.flag} does not tokenize as the ${kind} at ${url} does: ${JSON.stringify(PROBE_TEXT)} is ${JSON.stringify(local)} here and ${JSON.stringify(remote)} there; give the worker the tokenizer of the model that ${kind} runs`,
  );
}
