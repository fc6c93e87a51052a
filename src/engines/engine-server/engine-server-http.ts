import { ArmatureError } from "../../protocol/index.js";

/** An `--engine-url`, checked, without a trailing slash. */
export function engineUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--engine-url must be an http(s) URL such as http://127.0.0.1:8080, got '${value}'`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ArmatureError("CONFIG_INVALID", `--engine-url must be an http(s) URL, got '${value}'`);
  }
  return url.href.replace(/\/+$/, "");
}

/** Whether `GET /health` answers 200 within `timeoutMs`. */
export async function isHealthy(url: string, timeoutMs: number): Promise<boolean> {
  try {
    const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.ok;
  } catch {
    return false;
  }
}

/** Waits for `GET /health` (an engine answers 503 while it loads its model); past `timeoutMs`, names the flags. */
export async function waitHealthy(kind: string, url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await isHealthy(url, Math.max(1, Math.min(2000, deadline - Date.now())))) return;
    if (Date.now() >= deadline) {
      throw new ArmatureError(
        "CONFIG_INVALID",
        `--engine-url ${url}: ${kind} did not answer GET /health with 200 within ${Math.round(timeoutMs / 1000)} s; is it started, and is this its address? (--engine-wait sets how long to wait)`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** `GET url` as JSON within 5 s, or an error naming the URL and what was expected there. */
export async function getJson(kind: string, url: string, path: string): Promise<unknown> {
  try {
    const response = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(5000) });
    return await response.json();
  } catch (cause) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--engine-url ${url}: GET ${path} gave no JSON (${(cause as Error).message}); is it a ${kind}?`,
      {
        cause,
      },
    );
  }
}

/** An engine's non-200 answer as an error: 503 (loading, no free slot) is retryable on another worker. */
export async function engineHttpError(kind: string, url: string, response: Response): Promise<ArmatureError> {
  const text = await response.text().catch(() => "");
  let message = text.slice(0, 300);
  try {
    const parsed = JSON.parse(text) as { error?: { message?: unknown } | string; detail?: unknown };
    if (typeof parsed.error === "object" && typeof parsed.error?.message === "string") message = parsed.error.message;
    else if (typeof parsed.detail === "string") message = parsed.detail;
  } catch {}
  return new ArmatureError("ENGINE_FAILED", `${kind} at ${url} answered ${response.status}: ${message}`, {
    retryable: response.status === 503,
  });
}

/** A sample's value in a Prometheus exposition (`name`, labels or none); NaN when it is absent. */
export function metricValue(text: string, name: string): number {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return Number(new RegExp(`^${escaped}(?:\\{[^}]*\\})? ([\\d.eE+-]+)`, "m").exec(text)?.[1]);
}

/**
 * One SSE `data` payload of an engine server's stream, parsed: undefined for `[DONE]`; a payload
 * that is not JSON fails the request naming the server.
 */
export function streamMessage(kind: string, url: string, data: string): unknown {
  if (data === "[DONE]") return undefined;
  try {
    return JSON.parse(data);
  } catch {
    throw new ArmatureError("ENGINE_FAILED", `${kind} at ${url} sent a stream message that is not JSON: ${data.slice(0, 120)}`);
  }
}
