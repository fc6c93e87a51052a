import { parseArgs } from "node:util";
import { type LoadMode, runBench } from "../bench/index.js";
import { ArmatureError } from "../protocol/index.js";
import { loadTrace } from "../sim/index.js";

export const BENCH_USAGE = `usage: armature bench --url http://127.0.0.1:8000 --model NAME
       (--concurrency N | --rate R | --trace FILE.jsonl [--speedup X] [--limit N])
       [--requests N] [--duration SECONDS] [--input-tokens N] [--output-tokens N] [--vocab-size N]
       [--slo-ttft MS] [--slo-itl MS] [--seed N] [--json]`;

/** `armature bench`: load against any OpenAI-compatible URL; TTFT, ITL, throughput, goodput. */
export async function benchCommand(argv: readonly string[], out: (t: string) => void, err: (t: string) => void): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      url: { type: "string", default: "http://127.0.0.1:8000" },
      model: { type: "string" },
      concurrency: { type: "string" },
      rate: { type: "string" },
      trace: { type: "string" },
      speedup: { type: "string", default: "1" },
      limit: { type: "string" },
      requests: { type: "string" },
      duration: { type: "string" },
      "input-tokens": { type: "string", default: "128" },
      "output-tokens": { type: "string", default: "32" },
      "vocab-size": { type: "string", default: "256" },
      "trace-block-size": { type: "string", default: "512" },
      "slo-ttft": { type: "string" },
      "slo-itl": { type: "string" },
      seed: { type: "string", default: "1" },
      json: { type: "boolean", default: false },
    },
  });
  const num = (flag: string, value: string | undefined): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0)
      throw new ArmatureError("CONFIG_INVALID", `--${flag} must be a positive number, got '${value}'\n${BENCH_USAGE}`);
    return n;
  };
  if (!values.model) throw new ArmatureError("CONFIG_INVALID", `--model is required (GET /v1/models lists them)\n${BENCH_USAGE}`);
  const modes = [values.concurrency, values.rate, values.trace].filter((v) => v !== undefined);
  if (modes.length !== 1)
    throw new ArmatureError("CONFIG_INVALID", `give exactly one of --concurrency, --rate, --trace\n${BENCH_USAGE}`);
  if (values.duration !== undefined && !values.concurrency) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `--duration goes with --concurrency (a closed loop for a fixed time)\n${BENCH_USAGE}`,
    );
  }
  const durationMs = values.duration === undefined ? undefined : num("duration", values.duration) * 1000;
  // With --duration, --requests is a cap that defaults to none; otherwise it defaults to 100.
  const requests =
    values.requests !== undefined ? num("requests", values.requests) : durationMs === undefined ? 100 : Number.MAX_SAFE_INTEGER;
  let mode: LoadMode;
  if (values.concurrency)
    mode = { kind: "concurrency", concurrency: num("concurrency", values.concurrency), requests, durationMs };
  else if (values.rate) mode = { kind: "rate", requestsPerSecond: num("rate", values.rate), requests };
  else {
    let trace = await loadTrace(values.trace as string);
    if (values.limit) trace = trace.slice(0, num("limit", values.limit));
    mode = {
      kind: "trace",
      trace,
      speedup: num("speedup", values.speedup),
      traceBlockSize: num("trace-block-size", values["trace-block-size"]),
    };
  }
  const report = await runBench({
    url: values.url ?? "http://127.0.0.1:8000",
    model: values.model,
    mode,
    inputTokens: num("input-tokens", values["input-tokens"]),
    outputTokens: num("output-tokens", values["output-tokens"]),
    vocabSize: num("vocab-size", values["vocab-size"]),
    sloTtftMs: values["slo-ttft"] ? num("slo-ttft", values["slo-ttft"]) : undefined,
    sloItlMs: values["slo-itl"] ? num("slo-itl", values["slo-itl"]) : undefined,
    seed: Number(values.seed),
    // A run bounded by --duration alone has no request count to show.
    onProgress: (done, total) => err(total === Number.MAX_SAFE_INTEGER ? `\r${done} requests` : `\r${done}/${total} requests`),
  });
  err("\n");
  if (values.json) {
    out(`${JSON.stringify(report)}\n`);
    return report.failed > 0 ? 1 : 0;
  }
  const f = (s: { mean: number; p50: number; p99: number }) => `${s.mean.toFixed(1)} / ${s.p50.toFixed(1)} / ${s.p99.toFixed(1)}`;
  out(
    "| requests | completed | failed | req/s | hit rate | TTFT mean / p50 / p99 ms | ITL mean / p50 / p99 ms | output tok/s | goodput req/s |\n",
  );
  out("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  out(
    `| ${report.requests} | ${report.completed} | ${report.failed} | ${report.requests_per_s.toFixed(1)} | ${(100 * report.hit_rate).toFixed(1)}% | ${f(report.ttft_ms)} | ${f(report.itl_ms)} | ${report.throughput_tok_s.toFixed(0)} | ${report.goodput_rps.toFixed(2)} |\n`,
  );
  if (report.without_usage > 0)
    out(`note: ${report.without_usage} streams had no usage; their tokens are counted from text chunks\n`);
  for (const e of report.errors) out(`error: ${e}\n`);
  return report.failed > 0 ? 1 : 0;
}
