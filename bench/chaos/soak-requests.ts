import { randomUUID } from "node:crypto";
import { type IncomingMessage, request } from "node:http";
import { SeededRandom } from "../../src/engines/index.js";

/** What a client does with one request. */
export type RequestKind = "stream-completion" | "stream-chat" | "unary-completion" | "unary-chat" | "disconnect" | "slow-reader";

/**
 * How one request ended, as the client saw it. `failed` is a clean failure: an HTTP error with an
 * OpenAI error body, or an SSE `error` event. `lost` is anything else that is not a completion: a
 * reset connection, a stream that ends without `[DONE]` or an error event, a body that is not JSON.
 */
export type Outcome =
  | { readonly type: "completed"; readonly completionTokens: number }
  | { readonly type: "failed"; readonly key: string }
  | { readonly type: "hung"; readonly detail: string }
  | { readonly type: "lost"; readonly detail: string }
  | { readonly type: "disconnected" };

export interface SoakRequestOptions {
  readonly baseUrl: string;
  readonly model: string;
  /** The request is abandoned and counted as hung when no answer ends by then. */
  readonly clientTimeoutMs: number;
}

const WEIGHTS: readonly [RequestKind, number][] = [
  ["stream-completion", 30],
  ["stream-chat", 15],
  ["unary-completion", 15],
  ["unary-chat", 10],
  ["disconnect", 15],
];

const FAMILIES = Array.from(
  { length: 8 },
  (_, i) => `You are assistant number ${i}. ${"Answer briefly and cite the relevant section of the handbook. ".repeat(4)}`,
);

/**
 * Draws request kinds (slow readers excepted: they have lanes of their own, so that their long
 * reads do not starve the rest of the mix) and prompts: a few shared prefixes (KV reuse across
 * workers) and random tails.
 */
export class RequestMix {
  readonly #rng: SeededRandom;

  constructor(seed: number) {
    this.#rng = new SeededRandom(seed);
  }

  kind(): RequestKind {
    let pick = this.#rng.next() * WEIGHTS.reduce((a, [, w]) => a + w, 0);
    for (const [kind, weight] of WEIGHTS) {
      pick -= weight;
      if (pick < 0) return kind;
    }
    return "stream-completion";
  }

  prompt(): string {
    const family = FAMILIES[this.#rng.int(FAMILIES.length)] as string;
    const words = Array.from({ length: 5 + this.#rng.int(40) }, () => `w${this.#rng.int(5000)}`);
    return `${family}Question: ${words.join(" ")}?`;
  }

  int(n: number): number {
    return this.#rng.int(n);
  }
}

/** Sends one request of `kind` and says how it ended; never rejects. */
export function sendSoakRequest(kind: RequestKind, mix: RequestMix, options: SoakRequestOptions): Promise<Outcome> {
  const chat = kind === "stream-chat" || kind === "unary-chat";
  const stream = !kind.startsWith("unary");
  const prompt = mix.prompt();
  const maxTokens = kind === "slow-reader" ? 64 + mix.int(64) : 8 + mix.int(56);
  const body: Record<string, unknown> = {
    model: options.model,
    max_tokens: maxTokens,
    ...(chat ? { messages: [{ role: "user", content: prompt }] } : { prompt }),
    ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
  };
  const payload = JSON.stringify(body);
  const path = chat ? "/v1/chat/completions" : "/v1/completions";
  // A client disconnects after a few token chunks; a slow reader pauses between reads.
  const disconnectAfter = kind === "disconnect" ? 1 + mix.int(6) : Number.POSITIVE_INFINITY;
  const pauseMs = kind === "slow-reader" ? 50 + mix.int(200) : 0;

  // Sent as x-request-id, so a hung or lost request can be found in the servers' logs.
  const requestId = randomUUID();
  const seen = { status: 0, worker: "", bytes: 0, lastByteAt: 0 };
  const startedAt = performance.now();
  const describe = (): string =>
    seen.status === 0
      ? `request ${requestId}: no response headers`
      : `request ${requestId}: HTTP ${seen.status} from worker ${seen.worker || "?"}, ${seen.bytes} bytes, last ${Math.round(seen.lastByteAt - startedAt)} ms after sending`;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (outcome: Outcome): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(
      () => finish({ type: "hung", detail: `${kind}: no end after ${options.clientTimeoutMs} ms; ${describe()}` }),
      options.clientTimeoutMs,
    );
    const req = request(
      new URL(path, options.baseUrl),
      {
        method: "POST",
        agent: false,
        headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload), "x-request-id": requestId },
      },
      (res) => {
        seen.status = res.statusCode ?? 0;
        seen.worker = String(res.headers["x-armature-worker"] ?? "");
        res.on("data", (chunk: string | Buffer) => {
          seen.bytes += chunk.length;
          seen.lastByteAt = performance.now();
        });
        const contentType = String(res.headers["content-type"] ?? "");
        if (res.statusCode === 200 && stream && contentType.startsWith("text/event-stream")) {
          readStream(res, kind, disconnectAfter, pauseMs, finish);
        } else {
          readJson(res, kind, finish);
        }
      },
    );
    req.on("error", (error: NodeJS.ErrnoException) =>
      finish({ type: "lost", detail: `${kind}: ${error.code ?? error.message}` }),
    );
    req.end(payload);
  });
}

function readJson(res: IncomingMessage, kind: RequestKind, finish: (o: Outcome) => void): void {
  let text = "";
  res.setEncoding("utf8");
  res.on("data", (chunk: string) => {
    text += chunk;
  });
  res.on("error", () => finish({ type: "lost", detail: `${kind}: response reset (HTTP ${res.statusCode})` }));
  res.on("end", () => {
    let body: { error?: { message?: unknown; type?: unknown; code?: unknown }; usage?: { completion_tokens?: number } };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      finish({ type: "lost", detail: `${kind}: HTTP ${res.statusCode} body is not JSON: ${text.slice(0, 80)}` });
      return;
    }
    if (res.statusCode === 200 && body.usage) {
      finish({ type: "completed", completionTokens: body.usage.completion_tokens ?? 0 });
    } else if (res.statusCode !== 200 && typeof body.error?.message === "string" && typeof body.error.type === "string") {
      finish({ type: "failed", key: `HTTP ${res.statusCode} ${String(body.error.code ?? body.error.type)}` });
    } else {
      finish({ type: "lost", detail: `${kind}: HTTP ${res.statusCode} without usage or error body: ${text.slice(0, 80)}` });
    }
  });
}

interface StreamState {
  tokenChunks: number;
  finishReason: string | null;
  completionTokens: number | undefined;
  errorCode: string | undefined;
  done: boolean;
}

function readStream(
  res: IncomingMessage,
  kind: RequestKind,
  disconnectAfter: number,
  pauseMs: number,
  finish: (o: Outcome) => void,
): void {
  const state: StreamState = {
    tokenChunks: 0,
    finishReason: null,
    completionTokens: undefined,
    errorCode: undefined,
    done: false,
  };
  let buffer = "";
  res.setEncoding("utf8");
  res.on("data", (chunk: string) => {
    buffer += chunk;
    const events = buffer.split("\n\n");
    buffer = events.pop() ?? "";
    for (const event of events) {
      if (!readEvent(event, state)) {
        finish({ type: "lost", detail: `${kind}: malformed SSE event: ${event.slice(0, 80)}` });
        return;
      }
    }
    if (state.tokenChunks >= disconnectAfter && !state.done) {
      finish({ type: "disconnected" });
      return;
    }
    if (pauseMs > 0 && !state.done) {
      res.pause();
      setTimeout(() => res.resume(), pauseMs);
    }
  });
  res.on("error", () => finish({ type: "lost", detail: `${kind}: stream reset after ${state.tokenChunks} token chunks` }));
  res.on("end", () => finish(streamOutcome(kind, state)));
}

/** Applies one SSE event to `state`; false when it is not `data: <json>` or `data: [DONE]`. */
function readEvent(event: string, state: StreamState): boolean {
  if (event.startsWith(":") || event.trim() === "") return true;
  if (!event.startsWith("data: ")) return false;
  const data = event.slice(6);
  if (data === "[DONE]") {
    state.done = true;
    return true;
  }
  let parsed: {
    error?: { message?: unknown; code?: unknown; type?: unknown };
    choices?: { text?: string; delta?: { content?: string }; finish_reason?: string | null }[];
    usage?: { completion_tokens?: number } | null;
  };
  try {
    parsed = JSON.parse(data) as typeof parsed;
  } catch {
    return false;
  }
  if (parsed.error) {
    state.errorCode = String(parsed.error.code ?? parsed.error.type ?? "unknown");
    return typeof parsed.error.message === "string";
  }
  const choice = parsed.choices?.[0];
  if (choice?.text || choice?.delta?.content) state.tokenChunks++;
  if (choice?.finish_reason) state.finishReason = choice.finish_reason;
  if (parsed.usage) state.completionTokens = parsed.usage.completion_tokens;
  return true;
}

function streamOutcome(kind: RequestKind, state: StreamState): Outcome {
  if (state.errorCode !== undefined) return { type: "failed", key: `stream error ${state.errorCode}` };
  if (!state.done)
    return { type: "lost", detail: `${kind}: stream ended without [DONE] after ${state.tokenChunks} token chunks` };
  if (state.finishReason === null || state.completionTokens === undefined) {
    return { type: "lost", detail: `${kind}: [DONE] without a finish_reason or usage` };
  }
  return { type: "completed", completionTokens: state.completionTokens };
}
