// Memory: resident set size of `armature serve` (mocker engine) after 1k and after 20k requests.
// A leak per request shows up as growth between the two. Usage: npm run bench:memory
import { loadInChild, machine, spawnFastMockerServe } from "./load/processes.js";

const server = await spawnFastMockerServe();
const body = { model: "armature-mocker", prompt: "hello there", max_tokens: 16, stream: true };
const settle = () => new Promise((r) => setTimeout(r, 2000));
try {
  console.log(`memory — ${machine()}\n`);
  const before = server.rssBytes();
  const first = await loadInChild({ url: server.url, path: "/v1/completions", body, concurrency: 32, requests: 1000 });
  await settle();
  const after1k = server.rssBytes();
  const rest = await loadInChild({ url: server.url, path: "/v1/completions", body, concurrency: 32, requests: 19_000 });
  await settle();
  const after20k = server.rssBytes();
  const mb = (b: number) => (b / 2 ** 20).toFixed(1);
  console.log("| point | requests completed | RSS (MiB) |");
  console.log("|---|---:|---:|");
  console.log(`| started | 0 | ${mb(before)} |`);
  console.log(`| after 1k | ${first.completed} | ${mb(after1k)} |`);
  console.log(`| after 20k | ${first.completed + rest.completed} | ${mb(after20k)} |`);
  console.log(
    `\ngrowth from 1k to 20k: ${((100 * (after20k - after1k)) / after1k).toFixed(1)}% (failed: ${first.failed + rest.failed})`,
  );
} finally {
  await server.stop();
}
