// llama.cpp through armature against what a user would run instead, same GGUF, same threads, same
// four sequences, one run after the other (alternating), median of RUNS:
//   - node-llama-cpp driving the sequences directly (the engine armature embeds, without armature);
//   - `armature serve --engine llamacpp` (the same engine in armature's worker);
//   - llama.cpp's own llama-server, called directly on its OpenAI route;
//   - `armature serve --engine llama-server` in front of that same llama-server.
// Streams of 128 sampled tokens (EOS ignored) from distinct 64-token prompts (no prefix reuse), at
// 1 and 4 concurrent streams, at 1 thread and at every core. Reports aggregate tokens/s (tokens of
// all streams over the wall time of the batch) and TTFT p50, with the backend and threads.
// Usage: npm run bench:llamacpp [-- --runs N]
import { mkdtemp, writeFile } from "node:fs/promises";
import { Agent } from "node:http";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { buildTinyModel } from "../src/engines/index.js";
import { startLlamaServer } from "../test/helpers/llama-server.js";
import { type Batch, directRunner, PROMPT_TOKENS, streamBatch } from "./load/llamacpp-paths.js";
import { machine, type Served, spawnServer } from "./load/processes.js";

const { values } = parseArgs({ options: { runs: { type: "string", default: "3" } } });
const RUNS = Number(values.runs);
const TOKENS = 128;
const SEQUENCES = 4;
const models = {
  "tiny (d64, 2 layers)": {},
  "small (d256, 6 layers, ff1024)": { embeddingLength: 256, layers: 6, heads: 8, feedForwardLength: 1024 },
};
const threadCounts = [...new Set([1, availableParallelism()])];
const agent = new Agent({ keepAlive: true, maxSockets: 64 });

const WARMUP_TOKENS = 4096;
const WARMUP_SECONDS = 4;

/** Runs `batch` until WARMUP_TOKENS tokens or WARMUP_SECONDS have gone by. */
async function warm(batch: () => Promise<Batch>): Promise<void> {
  const started = performance.now();
  for (let tokens = 0; tokens < WARMUP_TOKENS && performance.now() - started < WARMUP_SECONDS * 1000; ) {
    const b = await batch();
    tokens += b.ttftMs.length * TOKENS;
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

/** `streams` concurrent streamed completions against an OpenAI-compatible server. */
function overHttp(url: string, model: string, streams: number): Promise<Batch> {
  // Connections left idle while the other paths ran may be closed by the server (llama-server
  // after 5 s) as a request goes out on them: each batch opens its own.
  agent.destroy();
  return streamBatch(url, model, streams, TOKENS, agent);
}

console.log(
  `llama.cpp throughput — ${machine()} — ${TOKENS} sampled tokens per stream, ${PROMPT_TOKENS}-token prompts, ${SEQUENCES} sequences, median of ${RUNS}\n`,
);
console.log(
  "| model | threads | streams | node-llama-cpp direct | armature llamacpp | ratio | llama-server direct | armature → llama-server | ratio |",
);
console.log("|---|---:|---:|---|---|---:|---|---|---:|");
const cell = (b: Batch[]) =>
  `${median(b.map((x) => x.tokensPerSecond)).toFixed(0)} tok/s, TTFT ${median(b.flatMap((x) => x.ttftMs)).toFixed(1)} ms`;
const ratio = (a: Batch[], d: Batch[]) =>
  `${((100 * median(a.map((x) => x.tokensPerSecond))) / median(d.map((x) => x.tokensPerSecond))).toFixed(1)}%`;
let backendLine = "";
for (const [name, options] of Object.entries(models)) {
  const path = join(await mkdtemp(join(tmpdir(), "armature-bench-")), "model.gguf");
  await writeFile(path, buildTinyModel(options));
  for (const threads of threadCounts) {
    const common = ["bin/armature.js", "serve", "--port", "0", "--log-level", "warn", "--model", path, "--model-name", "bench"];
    const engine = await startLlamaServer({ model: path, slots: SEQUENCES, contextPerSlot: 2048, threads });
    const servers: Served[] = [];
    const direct = await directRunner(path, { threads, sequences: SEQUENCES, tokens: TOKENS });
    try {
      servers.push(await spawnServer([...common, "--threads", String(threads), "--sequences", String(SEQUENCES)]));
      servers.push(await spawnServer([...common, "--engine", "llama-server", "--engine-url", engine.url]));
      const [inProcess, sidecar] = servers as [Served, Served];
      const health = (await (await fetch(`${inProcess.url}/health`)).json()) as {
        instances: { backend: string; threads: number }[];
      };
      backendLine = `armature's llamacpp worker reported backend ${health.instances[0]?.backend}`;
      if (health.instances[0]?.threads !== threads)
        throw new Error(`asked ${threads} threads, the worker has ${health.instances[0]?.threads}`);
      for (const streams of [1, SEQUENCES]) {
        const results: Batch[][] = [[], [], [], []];
        // Warm-up: each path until it has streamed WARMUP_TOKENS or run WARMUP_SECONDS. A server's
        // per-token path (and node-llama-cpp's own JavaScript) runs about twice as fast after a
        // few thousand tokens as on its first ones; a server in use is warm.
        await warm(() => direct.run(streams));
        await warm(() => overHttp(inProcess.url, "bench", streams));
        await warm(() => overHttp(engine.url, "bench", streams));
        await warm(() => overHttp(sidecar.url, "bench", streams));
        for (let i = 0; i < RUNS; i++) {
          results[0]?.push(await direct.run(streams));
          results[1]?.push(await overHttp(inProcess.url, "bench", streams));
          results[2]?.push(await overHttp(engine.url, "bench", streams));
          results[3]?.push(await overHttp(sidecar.url, "bench", streams));
        }
        const [d, a, l, s] = results as [Batch[], Batch[], Batch[], Batch[]];
        console.log(
          `| ${name} | ${threads} | ${streams} | ${cell(d)} | ${cell(a)} | ${ratio(a, d)} | ${cell(l)} | ${cell(s)} | ${ratio(s, l)} |`,
        );
      }
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
      await engine.stop();
      await direct.close();
    }
  }
}
console.log(`\n${backendLine}; llama-server: ${SEQUENCES} slots, --threads = --threads-batch as in the row.`);
