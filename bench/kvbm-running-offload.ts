// When a running request's KV blocks reach the host tier (`--kv-offload as-filled`, the default,
// against `at-end`), on one llama.cpp worker with 4 sequences, the 5M-parameter generated model and
// a 1 GiB host tier. A leader request with a 1,500-token prompt decodes 128 tokens; once it has
// streamed FOLLOW_AFTER of them, 3 followers arrive with the same 1,500 tokens and a suffix of their
// own (readers of one document) and each ask for 1 token. They run on the other sequences, which
// do not hold the prompt: they load it from the host tier or recompute it. Measured: the
// followers' time to first token and reused tokens, the leader's time for its 128 tokens; and the
// leader alone (no followers), for what the extra state saves cost. The modes alternate in one
// process, one thread; medians of RUNS.
// Usage: node --import tsx bench/kvbm-running-offload.ts [RUNS]
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildTinyModel, LlamaCppEngine } from "../src/engines/index.js";
import type { KvOffloadTiming } from "../src/kvbm/index.js";
import { PrometheusMeter, silentLogger } from "../src/observability/index.js";
import type { GenerateRequest } from "../src/protocol/index.js";
import { machine } from "./load/processes.js";

const RUNS = Number(process.argv[2] ?? 7);
const PROMPT = 1500;
const SUFFIX = 16;
const LEADER_TOKENS = 128;
const FOLLOWERS = 3;
const FOLLOW_AFTER = 8;
const BLOCK = 16;

const modelPath = join(await mkdtemp(join(tmpdir(), "armature-bench-")), "model.gguf");
await writeFile(modelPath, buildTinyModel({ embeddingLength: 256, layers: 6, heads: 8, feedForwardLength: 1024 }));

let promptsMade = 0;
/** `length` token ids no other prompt shares (its first block differs). */
function freshTokens(length: number): number[] {
  const seed = ++promptsMade;
  return Array.from({ length }, (_, i) => 10 + ((i * 7919 + seed * 104729) % 240));
}

function request(tokenIds: number[], maxTokens: number): GenerateRequest {
  const sampling = { temperature: 0 };
  return { type: "generate-request", requestId: "b", model: "bench", tokenIds, sampling, maxTokens, ignoreEos: true };
}

/** Milliseconds to the first token and to the end; the prompt tokens reused. */
async function timed(
  engine: LlamaCppEngine,
  tokenIds: number[],
  maxTokens: number,
  onToken?: (count: number) => void,
): Promise<{ firstMs: number; totalMs: number; cached: number }> {
  const started = performance.now();
  let firstMs = 0;
  let cached = 0;
  let count = 0;
  for await (const item of engine.generate(request(tokenIds, maxTokens), { signal: new AbortController().signal })) {
    if (item.type === "token-delta") {
      if (count === 0) firstMs = performance.now() - started;
      count += item.tokenIds.length;
      onToken?.(count);
    } else cached = item.cachedTokens;
  }
  return { firstMs, totalMs: performance.now() - started, cached };
}

async function shared(engine: LlamaCppEngine) {
  const prompt = freshTokens(PROMPT);
  const followers: Promise<{ firstMs: number; cached: number }>[] = [];
  const leader = await timed(engine, prompt, LEADER_TOKENS, (count) => {
    if (count !== FOLLOW_AFTER) return;
    for (let i = 0; i < FOLLOWERS; i++) followers.push(timed(engine, [...prompt, ...freshTokens(SUFFIX)], 1));
  });
  const done = await Promise.all(followers);
  return {
    followerFirstMs: done.reduce((sum, f) => sum + f.firstMs, 0) / done.length,
    followerCached: done.reduce((sum, f) => sum + f.cached, 0) / done.length,
    leaderMs: leader.totalMs,
  };
}

const modes: KvOffloadTiming[] = ["as-filled", "at-end"];
const engines = await Promise.all(
  modes.map((offload) =>
    LlamaCppEngine.create({
      modelPath,
      sequences: 4,
      contextSizePerSequence: 2048,
      blockSize: BLOCK,
      threads: 1,
      kvbm: {
        settings: { hostBytes: 1024 ** 3, offload },
        modelName: "bench",
        workerLabel: "0",
        meter: new PrometheusMeter(),
        logger: silentLogger,
      },
    }),
  ),
);
const rows = modes.map(() => ({
  followerFirst: [] as number[],
  cached: [] as number[],
  leader: [] as number[],
  alone: [] as number[],
}));
for (const e of engines) await shared(e); // warm-up
for (let run = 0; run < RUNS; run++) {
  for (const [m, e] of engines.entries()) {
    const row = rows[m] as (typeof rows)[number];
    const s = await shared(e);
    row.followerFirst.push(s.followerFirstMs);
    row.cached.push(s.followerCached);
    row.leader.push(s.leaderMs);
    row.alone.push((await timed(e, freshTokens(PROMPT), LEADER_TOKENS)).totalMs);
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
console.log(
  `Running offload — ${machine()} — 5M-parameter generated model, 4 sequences, 1 thread, host tier 1 GiB, ` +
    `leader ${PROMPT} + ${LEADER_TOKENS} tokens, ${FOLLOWERS} followers after its ${FOLLOW_AFTER}th token, median of ${RUNS}\n`,
);
console.log("| --kv-offload | followers' TTFT ms | followers' reused tokens | leader's 128 tokens ms | leader alone ms |");
console.log("|---|---:|---:|---:|---:|");
for (const [m, mode] of modes.entries()) {
  const r = rows[m] as (typeof rows)[number];
  console.log(
    `| ${mode} | ${median(r.followerFirst).toFixed(1)} | ${median(r.cached).toFixed(0)} | ${median(r.leader).toFixed(1)} | ${median(r.alone).toFixed(1)} |`,
  );
}
await Promise.all(engines.map((x) => x.close()));
