// Two checkouts of armature side by side on the same llama.cpp work, to tell a change from this
// machine's drift: `armature serve` from each tree (the generated model, 1 thread, 4 sequences),
// warmed with 10 batches of 4 streams each, then batches of 1 and of 4 streams alternating between
// the trees (the order flipped every round), tokens/s over each batch's wall time, median of ROUNDS.
// Usage: node --import tsx bench/llamacpp-tree-ab.ts BEFORE_DIR AFTER_DIR [tiny|small] [TOKENS] [ROUNDS]
// (a tree made with `git worktree add /tmp/before REV` and `ln -s $PWD/node_modules /tmp/before/`).
import { writeFile } from "node:fs/promises";
import { Agent } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildTinyModel } from "../src/engines/index.js";
import { streamBatch } from "./load/llamacpp-paths.js";
import { machine, type Served, spawnServer } from "./load/processes.js";

const [before, after, modelKind = "tiny", tokensArg = "512", roundsArg = "8"] = process.argv.slice(2);
if (!before || !after) throw new Error("usage: bench/llamacpp-tree-ab.ts BEFORE_DIR AFTER_DIR [tiny|small] [TOKENS] [ROUNDS]");
const TOKENS = Number(tokensArg);
const ROUNDS = Number(roundsArg);
const path = join(tmpdir(), `armature-ab-${modelKind}-${process.pid}.gguf`);
const shapes = modelKind === "tiny" ? {} : { embeddingLength: 256, layers: 6, heads: 8, feedForwardLength: 1024 };
await writeFile(path, buildTinyModel(shapes));

/** `armature serve` on the model from the checkout at `cwd`. */
function serveFrom(cwd: string): Promise<Served> {
  const args = ["bin/armature.js", "serve", "--port", "0", "--log-level", "warn", "--model", path, "--model-name", "bench"];
  return spawnServer([...args, "--threads", "1", "--sequences", "4"], undefined, cwd);
}

async function batch(url: string, streams: number): Promise<number> {
  return (await streamBatch(url, "bench", streams, TOKENS, new Agent({ keepAlive: false }))).tokensPerSecond;
}

const trees = [
  { name: "before", server: await serveFrom(before) },
  { name: "after", server: await serveFrom(after) },
];
try {
  for (const tree of trees) for (let i = 0; i < 10; i++) await batch(tree.server.url, 4);
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  console.log(`Two trees — ${machine()} — ${modelKind} model, ${TOKENS} tokens a stream, median of ${ROUNDS}\n`);
  console.log("| streams | before: tok/s (median) | rounds | after: tok/s (median) | rounds |");
  console.log("|---:|---:|---|---:|---|");
  for (const streams of [1, 4]) {
    const rates = new Map<string, number[]>(trees.map((t) => [t.name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const tree of round % 2 === 0 ? trees : [...trees].reverse()) {
        rates.get(tree.name)?.push(await batch(tree.server.url, streams));
      }
    }
    const cells = trees.map((t) => {
      const xs = rates.get(t.name) ?? [];
      return `${median(xs).toFixed(0)} | ${xs.map((x) => x.toFixed(0)).join(" ")}`;
    });
    console.log(`| ${streams} | ${cells.join(" | ")} |`);
  }
} finally {
  await Promise.all(trees.map((tree) => tree.server.stop()));
}
