// One stream at a time on llama.cpp: node-llama-cpp driving a sequence directly against `armature
// serve --engine llamacpp` with the same GGUF (the 0.2M tiny model), one thread, a fresh 64-token
// prompt per request, over a kept connection and over a fresh one, alternating. Reports the median
// time to the first token and to the stream's end. What armature adds to one request shows without
// the contention of concurrent streams.
// Usage: node --import tsx bench/llamacpp-single-stream.ts [TOKENS=128] [REQUESTS=20]
import { mkdtemp, writeFile } from "node:fs/promises";
import { Agent } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildTinyModel } from "../src/engines/index.js";
import { directRunner, PROMPT_TOKENS, streamBatch } from "./load/llamacpp-paths.js";
import { machine, spawnServer } from "./load/processes.js";

const TOKENS = Number(process.argv[2] ?? 128);
const REQUESTS = Number(process.argv[3] ?? 20);
const WARMUP = 30;

const path = join(await mkdtemp(join(tmpdir(), "armature-bench-")), "model.gguf");
await writeFile(path, buildTinyModel({}));
const direct = await directRunner(path, { threads: 1, sequences: 4, tokens: TOKENS });
const flags = "--port 0 --log-level warn --model-name bench --threads 1 --sequences 4".split(" ");
const server = await spawnServer(["bin/armature.js", "serve", ...flags, "--model", path]);
const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** [time to first token, time to the end] in ms. */
async function directly(): Promise<[number, number]> {
  const b = await direct.run(1);
  return [b.ttftMs[0] as number, b.wallMs];
}

async function overHttp(fresh: boolean): Promise<[number, number]> {
  if (fresh) agent.destroy();
  const b = await streamBatch(server.url, "bench", 1, TOKENS, agent);
  return [b.ttftMs[0] as number, b.wallMs];
}

const median = (xs: number[]) => ([...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number).toFixed(2);
try {
  for (let i = 0; i < WARMUP; i++) {
    await directly();
    await overHttp(false);
  }
  const runs: Record<string, [number, number][]> = { direct: [], kept: [], fresh: [] };
  for (let i = 0; i < REQUESTS; i++) {
    runs.direct?.push(await directly());
    runs.kept?.push(await overHttp(false));
    runs.fresh?.push(await overHttp(true));
  }
  console.log(
    `llama.cpp, one stream at a time — ${machine()} — ${TOKENS} tokens, ${PROMPT_TOKENS}-token prompts, median of ${REQUESTS}\n`,
  );
  console.log("| path | TTFT ms | stream ms |\n|---|---:|---:|");
  const names = { direct: "node-llama-cpp direct", kept: "armature, kept connection", fresh: "armature, fresh connection" };
  for (const [key, rows] of Object.entries(runs)) {
    console.log(`| ${names[key as keyof typeof names]} | ${median(rows.map((r) => r[0]))} | ${median(rows.map((r) => r[1]))} |`);
  }
} finally {
  await server.stop();
  await direct.close();
}
