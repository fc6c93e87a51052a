// Two checkouts of armature side by side on the frontend's work, to tell a change from this
// machine's drift: `armature serve --engine mocker --speedup-ratio 1000000 --sequences 512` from
// each tree, both up, wrk alternating between them (64 connections, streamed `/v1/completions`
// of MAX_TOKENS tokens, the order flipped every round) after a 3-s warm-up of each; per round each
// server's request rate and its CPU per request (its CPU time from /proc over the requests wrk read).
// Usage: node --import tsx bench/frontend-tree-ab.ts BEFORE_DIR AFTER_DIR [ROUNDS=5] [SECONDS=5] [MAX_TOKENS=16]
// (a tree made with `git worktree add /tmp/before REV` and `ln -s $PWD/node_modules /tmp/before/`).
import { machine, spawnServer } from "./load/processes.js";
import { runWrk } from "./load/wrk.js";

const [before, after, roundsArg = "5", secondsArg = "5", tokensArg = "16"] = process.argv.slice(2);
if (!before || !after) throw new Error("usage: bench/frontend-tree-ab.ts BEFORE_DIR AFTER_DIR [ROUNDS] [SECONDS] [MAX_TOKENS]");
const ROUNDS = Number(roundsArg);
const SECONDS = Number(secondsArg);
const body = {
  model: "armature-mocker",
  prompt: "hello",
  max_tokens: Number(tokensArg),
  stream: true,
  stream_options: { include_usage: true },
};
const args = "bin/armature.js serve --engine mocker --speedup-ratio 1000000 --sequences 512 --port 0 --log-level warn";
const trees = [
  { name: "before", server: await spawnServer(args.split(" "), undefined, before) },
  { name: "after", server: await spawnServer(args.split(" "), undefined, after) },
];
try {
  for (const { server } of trees) await runWrk(server.url, "/v1/completions", body, 64, 3);
  console.log(`Two trees under wrk — ${machine()} — 64 connections, ${body.max_tokens} tokens a stream, ${SECONDS} s a run\n`);
  console.log("| round | tree | req/s | CPU per request (µs) | failed |\n|---:|---|---:|---:|---:|");
  for (let round = 1; round <= ROUNDS; round++) {
    for (const { name, server } of round % 2 === 1 ? trees : [...trees].reverse()) {
      const cpuBefore = server.cpuSeconds();
      const wrk = await runWrk(server.url, "/v1/completions", body, 64, SECONDS);
      const cpuUs = ((server.cpuSeconds() - cpuBefore) * 1e6) / wrk.requests;
      console.log(`| ${round} | ${name} | ${wrk.requestsPerSecond.toFixed(0)} | ${cpuUs.toFixed(0)} | ${wrk.failed} |`);
    }
  }
} finally {
  await Promise.all(trees.map(({ server }) => server.stop()));
}
