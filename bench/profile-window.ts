// Reads a `.cpuprofile` (node --cpu-prof) of a server under load and reports where its busy time
// went per request, counting only the samples between the first and the last `writev` (so start-up
// and shutdown are left out). Usage:
//   node --import tsx bench/profile-window.ts PROFILE.cpuprofile REQUESTS [TOP]
// REQUESTS is what the load generator reported for the run (wrk's "N requests in"). With `--all`
// every sample counts (a replay, which writes nothing). With `--by-file` the busy time is summed per
// source file (Node's own internals as one) instead of per function.
import { readFileSync } from "node:fs";

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
}
interface Profile {
  readonly nodes: readonly ProfileNode[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
  readonly startTime: number;
}

const all = process.argv.includes("--all");
const byFile = process.argv.includes("--by-file");
const [file, requestsArg, topArg] = process.argv.slice(2).filter((arg) => !arg.startsWith("--"));
if (!file || !requestsArg) throw new Error("usage: bench/profile-window.ts PROFILE.cpuprofile REQUESTS [TOP]");
const requests = Number(requestsArg);
const profile = JSON.parse(readFileSync(file, "utf8")) as Profile;
const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
let at = profile.startTime;
const times = profile.timeDeltas.map((delta) => (at += delta));
const writes = profile.samples.flatMap((id, i) => (frames.get(id)?.functionName === "writev" ? [i] : []));
const first = all ? 0 : (writes[0] ?? 0);
const last = all ? profile.samples.length - 1 : (writes.at(-1) ?? profile.samples.length - 1);
const byFunction = new Map<string, number>();
let busyUs = 0;
for (let i = first; i <= last; i++) {
  const frame = frames.get(profile.samples[i] as number);
  const us = (times[i + 1] ?? (times[i] as number)) - (times[i] as number);
  if (!frame || frame.functionName === "(idle)") continue;
  busyUs += us;
  const where = frame.url.replace(/^.*\/(src|node_modules)\//, "$1/");
  const key = byFile
    ? where.replace(/^node:internal\/.*$/, "node:internal") || frame.functionName
    : `${frame.functionName || "(anonymous)"} ${where}`;
  byFunction.set(key, (byFunction.get(key) ?? 0) + us);
}
console.log(`busy ${(busyUs / 1e6).toFixed(2)} s over the load, ${(busyUs / requests).toFixed(0)} µs per request`);
for (const [name, us] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, Number(topArg ?? 30))) {
  console.log(`${((100 * us) / busyUs).toFixed(2).padStart(6)}% ${(us / requests).toFixed(1).padStart(7)} µs/request  ${name}`);
}
