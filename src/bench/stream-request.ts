import { type Agent, request } from "node:http";
import { SseLineReader } from "../protocol/index.js";

/** Timings of one streamed completion, as a client sees them. */
export interface RequestTiming {
  /** HTTP 200, no error event, and the stream ended with `data: [DONE]`. */
  readonly ok: boolean;
  /** Milliseconds from sending to the first chunk that carries text (NaN when none came). */
  readonly ttftMs: number;
  /** Mean milliseconds between tokens after the first (NaN with fewer than two). */
  readonly itlMs: number;
  readonly latencyMs: number;
  readonly promptTokens: number;
  /**
   * Tokens generated, from the server's `usage` (the bench always asks for it). A server that sends
   * no usage gets the count of chunks that carried text instead, and `usageReported` false.
   */
  readonly completionTokens: number;
  readonly usageReported: boolean;
  readonly cachedTokens: number;
  readonly error?: string | undefined;
}

interface CompletionChunk {
  readonly choices?: readonly { readonly text?: string }[];
  readonly usage?: {
    readonly prompt_tokens?: number;
    readonly completion_tokens?: number;
    readonly prompt_tokens_details?: { readonly cached_tokens?: number };
  };
  readonly error?: { readonly message?: string };
}

/**
 * Sends one streaming `/v1/completions` request (usage included) and times it. Works against any
 * OpenAI-compatible server; `cached_tokens` is read when the server reports it. Tokens are counted
 * from `usage`, never from SSE events: the finish chunk carries no token, and a stream that ends in
 * an error event, or without `[DONE]`, is not completed.
 */
export function streamCompletion(baseUrl: string, body: Record<string, unknown>, agent: Agent): Promise<RequestTiming> {
  const payload = JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } });
  const started = performance.now();
  const failed = (error: string): RequestTiming => ({
    ok: false,
    ttftMs: Number.NaN,
    itlMs: Number.NaN,
    latencyMs: performance.now() - started,
    promptTokens: 0,
    completionTokens: 0,
    usageReported: false,
    cachedTokens: 0,
    error,
  });
  return new Promise((resolve) => {
    const req = request(
      new URL("/v1/completions", baseUrl),
      { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } },
      (res) => {
        let first = Number.NaN;
        let last = Number.NaN;
        let textChunks = 0;
        let done = false;
        let usage: CompletionChunk["usage"];
        let failure: string | undefined = res.statusCode === 200 ? undefined : `HTTP ${res.statusCode}`;
        const reader = new SseLineReader();
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          const now = performance.now();
          for (const data of reader.push(chunk)) {
            if (data === "[DONE]") {
              done = true;
              continue;
            }
            let parsed: CompletionChunk;
            try {
              parsed = JSON.parse(data) as CompletionChunk;
            } catch {
              failure ??= `a stream event is not JSON: ${data.slice(0, 80)}`;
              continue;
            }
            if (parsed.error) failure ??= parsed.error.message ?? "an error event";
            if (parsed.usage) usage = parsed.usage;
            if (parsed.choices?.some((c) => c.text)) {
              if (Number.isNaN(first)) first = now;
              last = now;
              textChunks++;
            }
          }
        });
        res.on("error", (error) => resolve(failed(error.message)));
        res.on("end", () => {
          if (failure === undefined && !done) failure = "the stream ended without [DONE]";
          const completion = usage?.completion_tokens ?? textChunks;
          resolve({
            ok: failure === undefined,
            ttftMs: first - started,
            itlMs: completion > 1 ? (last - first) / (completion - 1) : Number.NaN,
            latencyMs: performance.now() - started,
            promptTokens: usage?.prompt_tokens ?? 0,
            completionTokens: completion,
            usageReported: usage?.completion_tokens !== undefined,
            cachedTokens: usage?.prompt_tokens_details?.cached_tokens ?? 0,
            error: failure,
          });
        });
      },
    );
    req.on("error", (error) => resolve(failed(error.message)));
    req.end(payload);
  });
}
