import type { Tokenizer } from "../engines/index.js";
import type { TokenLogprob } from "../protocol/index.js";

/** A token as a client sees it: its text and that text's UTF-8 bytes. */
export interface TokenText {
  readonly token: string;
  readonly bytes: number[];
}

/** One generated token's log-probability with its text and the likeliest alternatives' (most likely first). */
export interface TokenLogprobEntry extends TokenText {
  readonly logprob: number;
  readonly top: readonly (TokenText & { readonly logprob: number })[];
}

/**
 * Gives a worker's token log-probabilities (ids) their text, as the model's tokenizer decodes each
 * token alone; with `asTokenIds` (vLLM's `return_tokens_as_token_ids`) the token is `token_id:<id>`
 * and its bytes stay those of its text.
 */
export function describeLogprobs(
  tokenizer: Tokenizer,
  tokenIds: readonly number[],
  logprobs: readonly TokenLogprob[],
  asTokenIds = false,
): TokenLogprobEntry[] {
  const texts = tokenTexts(tokenizer);
  const text = (id: number): TokenText => {
    let known = texts.get(id);
    if (!known) {
      const decoded = tokenizer.decode([id]);
      known = { token: decoded, bytes: [...Buffer.from(decoded, "utf8")] };
      texts.set(id, known);
    }
    return asTokenIds ? { token: `token_id:${id}`, bytes: known.bytes } : known;
  };
  return tokenIds.map((id, i) => {
    const entry = logprobs[i] ?? { logprob: 0, top: [] };
    return { ...text(id), logprob: entry.logprob, top: entry.top.map((t) => ({ ...text(t.token), logprob: t.logprob })) };
  });
}

/** Each tokenizer's tokens decoded alone, as they are asked for: at most its vocabulary. */
const decodedTokens = new WeakMap<Tokenizer, Map<number, TokenText>>();

function tokenTexts(tokenizer: Tokenizer): Map<number, TokenText> {
  let texts = decodedTokens.get(tokenizer);
  if (!texts) {
    texts = new Map();
    decodedTokens.set(tokenizer, texts);
  }
  return texts;
}

/** Chat's `choices[].logprobs`: `{content: [{token, logprob, bytes, top_logprobs}], refusal: null}`. */
export function chatLogprobs(entries: readonly TokenLogprobEntry[]) {
  return {
    content: entries.map((e) => ({
      token: e.token,
      logprob: e.logprob,
      bytes: e.bytes,
      top_logprobs: e.top.map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
    })),
    refusal: null,
  };
}

/**
 * Legacy completions' `choices[].logprobs`: parallel lists, `top_logprobs` a map from token text to
 * log-probability holding the chosen token and the `logprobs` likeliest (as OpenAI and vLLM give it),
 * `text_offset` each token's offset in the choice's text from `startOffset` on.
 */
export function completionLogprobs(entries: readonly TokenLogprobEntry[], startOffset: number) {
  const textOffset: number[] = [];
  let offset = startOffset;
  for (const e of entries) {
    textOffset.push(offset);
    offset += e.token.length;
  }
  return {
    tokens: entries.map((e) => e.token),
    token_logprobs: entries.map((e) => e.logprob),
    top_logprobs: entries.map((e) => Object.fromEntries([[e.token, e.logprob], ...e.top.map((t) => [t.token, t.logprob])])),
    text_offset: textOffset,
  };
}
