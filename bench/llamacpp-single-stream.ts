// One stream at a time on llama.cpp: node-llama-cpp driving a sequence directly, armature's llama.cpp
// engine (`LlamaCppEngine.generate`, the worker's engine without the server) in this process, and
// `armature serve --engine llamacpp` over a kept connection and over a fresh one, in turn, with
// the same GGUF (the 0.2M tiny model), one thread, a fresh 64-token prompt per request. Reports the
// median time to the first token and to the stream's end. What armature adds to one request shows
// without the contention of concurrent streams, split into the engine's share and the server's.
// Usage: node --import tsx bench/llamacpp-single-stream.ts [TOKENS=128] [REQUESTS=20] [SEQUENCES=4]
import { mkdtemp, writeFile } from "node:fs/promises";
import { Agent } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildTinyModel, LlamaCppEngine } from "../src/engines/index.js";
import type { GenerateRequest } from "../src/protocol/index.js";
import { summarize } from "../src/sim/index.js";
import { directRunner, freshPrompt, PROMPT_TOKENS, SAMPLING, streamBatch } from "./load/llamacpp-paths.js";
import { machine, spawnServer } from "./load/processes.js";

/** A positional argument: a whole number of at least 1, or the usage line naming it. */
function countArg(at: number, name: string, fallback: number): number {
  const value = Number(process.argv[at] ?? fallback);
  if (!Number.isInteger(value) || value < 1) {
    throw new Error(
      `${name} must be a whole number of at least 1, not ${process.argv[at]}; usage: bench/llamacpp-single-stream.ts [TOKENS] [REQUESTS] [SEQUENCES]`,
    );
  }
  return value;
}
const TOKENS = countArg(2, "TOKENS", 128);
const REQUESTS = countArg(3, "REQUESTS", 20);
/** Sequences of each context (`--sequences`), alike for every path. */
const SEQUENCES = countArg(4, "SEQUENCES", 4);
const WARMUP = 30;

const path = join(await mkdtemp(join(tmpdir(), "armature-bench-")), "model.gguf");
await writeFile(path, buildTinyModel({}));
const direct = await directRunner(path, { threads: 1, sequences: SEQUENCES, tokens: TOKENS });
const engine = await LlamaCppEngine.create({ modelPath: path, threads: 1, sequences: SEQUENCES });
const flags = `--port 0 --log-level warn --model-name bench --threads 1 --sequences ${SEQUENCES}`.split(" ");
const server = await spawnServer(["bin/armature.js", "serve", ...flags, "--model", path]);
const agent = new Agent({ keepAlive: true, maxSockets: SEQUENCES });

/** [time to first token, time to the end] in ms. */
async function directly(): Promise<[number, number]> {
  const b = await direct.run(1);
  return [b.ttftMs[0] as number, b.wallMs];
}

let requestId = 0;
async function inEngine(): Promise<[number, number]> {
  const request: GenerateRequest = {
    type: "generate-request",
    requestId: `single-${++requestId}`,
    model: "bench",
    tokenIds: freshPrompt(),
    sampling: { temperature: SAMPLING.temperature, topP: SAMPLING.top_p, topK: SAMPLING.top_k, minP: SAMPLING.min_p },
    maxTokens: TOKENS,
    ignoreEos: true,
  };
  const started = performance.now();
  let ttft = 0;
  let tokens = 0;
  for await (const response of engine.generate(request, { signal: new AbortController().signal })) {
    if (response.type !== "token-delta") continue;
    if (tokens === 0) ttft = performance.now() - started;
    tokens += response.tokenIds.length;
  }
  if (tokens !== TOKENS) throw new Error(`the engine streamed ${tokens} tokens, not ${TOKENS}`);
  return [ttft, performance.now() - started];
}

async function overHttp(fresh: boolean): Promise<[number, number]> {
  if (fresh) agent.destroy();
  const b = await streamBatch(server.url, "bench", 1, TOKENS, agent);
  return [b.ttftMs[0] as number, b.wallMs];
}

const median = (xs: readonly number[]): string => summarize(xs).p50.toFixed(2);
try {
  for (let i = 0; i < WARMUP; i++) {
    await directly();
    await inEngine();
    await overHttp(false);
  }
  const runs: Record<string, [number, number][]> = { direct: [], engine: [], kept: [], fresh: [] };
  const paths: [string, () => Promise<[number, number]>][] = [
    ["direct", directly],
    ["engine", inEngine],
    ["kept", () => overHttp(false)],
    ["fresh", () => overHttp(true)],
  ];
  // The order turns by one each request: the path that runs right after the in-process ones was
  // measured slower (by 5-12 ms a stream) whichever it was, so each path takes each place in turn.
  for (let i = 0; i < REQUESTS; i++) {
    for (let p = 0; p < paths.length; p++) {
      const [name, run] = paths[(i + p) % paths.length] as [string, () => Promise<[number, number]>];
      runs[name]?.push(await run());
    }
  }
  console.log(
    `llama.cpp, one stream at a time — ${machine()} — ${TOKENS} tokens, ${PROMPT_TOKENS}-token prompts, ${SEQUENCES} sequences, median of ${REQUESTS}\n`,
  );
  console.log("| path | TTFT ms | stream ms |\n|---|---:|---:|");
  const names = {
    direct: "node-llama-cpp direct",
    engine: "armature's engine in this process (no server)",
    kept: "armature, kept connection",
    fresh: "armature, fresh connection",
  };
  for (const [key, rows] of Object.entries(runs)) {
    console.log(`| ${names[key as keyof typeof names]} | ${median(rows.map((r) => r[0]))} | ${median(rows.map((r) => r[1]))} |`);
  }
} finally {
  await server.stop();
  await engine.close();
  await direct.close();
}
