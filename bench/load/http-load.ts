import { Agent, request } from "node:http";

/** One load run against an OpenAI-style streaming endpoint. */
export interface LoadSpec {
  readonly url: string;
  readonly path: string;
  readonly body: unknown;
  readonly concurrency: number;
  /** Stop starting requests after this long. */
  readonly durationMs?: number;
  /** Or stop after this many requests in total. */
  readonly requests?: number;
}

export interface LoadResult {
  readonly concurrency: number;
  readonly completed: number;
  readonly failed: number;
  readonly seconds: number;
  readonly requestsPerSecond: number;
  /** SSE `data:` events carrying tokens (not `[DONE]`), per second. */
  readonly eventsPerSecond: number;
  readonly firstEventMs: { readonly p50: number; readonly p99: number };
  readonly latencyMs: { readonly p50: number; readonly p99: number };
}

function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

/** Closed-loop load: `concurrency` clients, each sending its next request when the last ends. */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const agent = new Agent({ keepAlive: true, maxSockets: spec.concurrency });
  const target = new URL(spec.path, spec.url);
  const payload = JSON.stringify(spec.body);
  const firstEvent: number[] = [];
  const latency: number[] = [];
  let events = 0;
  let completed = 0;
  let failed = 0;
  let started = 0;
  const t0 = performance.now();
  const more = (): boolean =>
    spec.requests !== undefined ? started < spec.requests : performance.now() - t0 < (spec.durationMs ?? 10_000);

  const one = (): Promise<void> =>
    new Promise((resolve) => {
      const begin = performance.now();
      let first = -1;
      let tail = "";
      const req = request(
        target,
        { method: "POST", agent, headers: { "content-type": "application/json", "content-length": Buffer.byteLength(payload) } },
        (res) => {
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => {
            const text = tail + chunk;
            const parts = text.split("\n\n");
            tail = parts.pop() ?? "";
            for (const part of parts) {
              if (!part.startsWith("data: ") || part === "data: [DONE]") continue;
              if (first < 0) first = performance.now() - begin;
              events++;
            }
          });
          res.on("end", () => {
            if (res.statusCode === 200) {
              completed++;
              latency.push(performance.now() - begin);
              if (first >= 0) firstEvent.push(first);
            } else {
              failed++;
            }
            resolve();
          });
        },
      );
      req.on("error", () => {
        failed++;
        resolve();
      });
      req.end(payload);
    });

  await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      while (more()) {
        started++;
        await one();
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  agent.destroy();
  firstEvent.sort((a, b) => a - b);
  latency.sort((a, b) => a - b);
  return {
    concurrency: spec.concurrency,
    completed,
    failed,
    seconds,
    requestsPerSecond: completed / seconds,
    eventsPerSecond: events / seconds,
    firstEventMs: { p50: percentile(firstEvent, 50), p99: percentile(firstEvent, 99) },
    latencyMs: { p50: percentile(latency, 50), p99: percentile(latency, 99) },
  };
}
