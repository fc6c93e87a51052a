import { type Agent, request } from "node:http";

/** Timings of one streamed completion, as a client sees them. */
export interface RequestTiming {
  readonly ok: boolean;
  /** Milliseconds from sending to the first content token (NaN when none came). */
  readonly ttftMs: number;
  /** Mean milliseconds between tokens after the first (NaN with fewer than two). */
  readonly itlMs: number;
  readonly latencyMs: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens: number;
  readonly error?: string | undefined;
}

/**
 * Sends one streaming `/v1/completions` request (usage included) and times it. Works against any
 * OpenAI-compatible server; `cached_tokens` is read when the server reports it.
 */
export function streamCompletion(baseUrl: string, body: Record<string, unknown>, agent: Agent): Promise<RequestTiming> {
  const payload = JSON.stringify({ ...body, stream: true, stream_options: { include_usage: true } });
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(
      new URL("/v1/completions", baseUrl),
      { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } },
      (res) => {
        let first = Number.NaN;
        let last = Number.NaN;
        let buffer = "";
        let usage: { prompt_tokens?: number; completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } } =
          {};
        let failure: string | undefined = res.statusCode === 200 ? undefined : `HTTP ${res.statusCode}`;
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          buffer += chunk;
          const events = buffer.split("\n\n");
          buffer = events.pop() ?? "";
          const now = performance.now();
          for (const event of events) {
            if (!event.startsWith("data: ") || event === "data: [DONE]") continue;
            const data = JSON.parse(event.slice(6)) as {
              choices?: { text?: string }[];
              usage?: typeof usage;
              error?: { message: string };
            };
            if (data.error) failure = data.error.message;
            if (data.usage) usage = data.usage;
            if (data.choices?.[0]?.text) {
              if (Number.isNaN(first)) first = now;
              last = now;
            }
          }
        });
        res.on("end", () => {
          const completion = usage.completion_tokens ?? 0;
          resolve({
            ok: failure === undefined,
            ttftMs: first - started,
            itlMs: completion > 1 ? (last - first) / (completion - 1) : Number.NaN,
            latencyMs: performance.now() - started,
            promptTokens: usage.prompt_tokens ?? 0,
            completionTokens: completion,
            cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0,
            error: failure,
          });
        });
      },
    );
    req.on("error", (error) =>
      resolve({
        ok: false,
        ttftMs: Number.NaN,
        itlMs: Number.NaN,
        latencyMs: performance.now() - started,
        promptTokens: 0,
        completionTokens: 0,
        cachedTokens: 0,
        error: error.message,
      }),
    );
    req.end(payload);
  });
}
