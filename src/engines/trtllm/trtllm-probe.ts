import { ArmatureError } from "../../protocol/index.js";
import { engineHttpError } from "../engine-server/engine-server-http.js";
import type { EngineTokenizer } from "../engine-server/engine-tokenizer.js";
import { PROBE_TEXT, sameTokens, tokenizerMismatch } from "../engine-server/tokenizer-probe.js";

/**
 * The start's checks of a `trtllm-serve`: it returns token ids (`detokenize: false`, in TensorRT-LLM
 * since mid-2025), and it tokenizes as the worker does. TensorRT-LLM has no `/tokenize`: the probe
 * goes as a one-token completion, whose prompt length must be the worker's, and, where the server
 * has it (newer ones), to `POST /_internal/tokenize`, whose ids must be the worker's (after the
 * beginning-of-sequence token that route adds). A difference stops the start, naming both.
 */
export async function checkTrtllmTokenizer(url: string, model: string, tokenizer: EngineTokenizer): Promise<void> {
  const local = tokenizer.encode(PROBE_TEXT);
  const completion = await post(url, "/v1/completions", {
    model,
    prompt: PROBE_TEXT,
    max_tokens: 1,
    temperature: 0,
    add_special_tokens: false,
    detokenize: false,
  });
  if (!completion.ok) {
    const error = await engineHttpError("trtllm", url, completion);
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--engine-url ${url}: a one-token completion with detokenize: false was refused (${error.message}); armature reads token ids, which trtllm-serve returns from mid-2025 on`,
    );
  }
  const answer = (await completion.json().catch(() => undefined)) as
    | { choices?: { token_ids?: unknown }[]; usage?: { prompt_tokens?: unknown } }
    | undefined;
  const ids = answer?.choices?.[0]?.token_ids;
  if (!Array.isArray(ids) || !ids.every((t) => Number.isInteger(t))) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--engine-url ${url}: a completion with detokenize: false came back without token_ids; is it a trtllm-serve from mid-2025 on?`,
    );
  }
  const counted = answer?.usage?.prompt_tokens;
  if (counted !== local.length) {
    throw tokenizerMismatch("trtllm", url, tokenizer, `${local.length} tokens`, `${String(counted)} tokens`);
  }
  const tokenized = await post(url, "/_internal/tokenize", { model, prompt: PROBE_TEXT });
  if (tokenized.status === 404) {
    await tokenized.body?.cancel();
    return;
  }
  const remote = ((await tokenized.json().catch(() => undefined)) as { tokens?: unknown } | undefined)?.tokens;
  const bos = tokenizer.bosToken === undefined ? [] : tokenizer.encode(tokenizer.bosToken);
  if (Array.isArray(remote) && (sameTokens(remote, local) || sameTokens(remote, [...bos, ...local]))) return;
  throw tokenizerMismatch("trtllm", url, tokenizer, local, remote);
}

async function post(url: string, path: string, body: Record<string, unknown>): Promise<Response> {
  try {
    return await fetch(`${url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (cause) {
    throw new ArmatureError("CONFIG_INVALID", `--engine-url ${url}: POST ${path} failed (${(cause as Error).message})`, {
      cause,
    });
  }
}
