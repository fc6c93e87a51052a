// Memory along the paths that could grow without bound, round after round: random made-up model
// names (metrics are labelled only by served names), random prompts (the KV index grows until the
// workers' caches are full, then stays), the longest stop lists accepted and lists over the cap,
// disaggregated requests the client abandons (KV exports are capped and expire), and random JSON
// schemas as response_format on a llama.cpp worker (the grammar cache is an LRU). After each round
// both servers report their heap after a full collection and their RSS, and /metrics its series.
// Usage: npm run bench:memory [-- --rounds 10]
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { SeededRandom } from "../src/engines/index.js";
import { machine } from "./load/processes.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "10" } } });
const ROUNDS = Number(values.rounds);
const ROOT = fileURLToPath(new URL("../", import.meta.url));
const MOCKER = "armature-mocker";
const rng = new SeededRandom(7);

interface MeasuredServer {
  readonly name: string;
  readonly url: string;
  memory(): Promise<NodeJS.MemoryUsage>;
  stop(): Promise<void>;
}

/** `armature serve ARGS` in a child that reports its memory over IPC (bench/load/measured-serve.ts). */
async function startMeasured(name: string, args: readonly string[]): Promise<MeasuredServer> {
  const child: ChildProcess = fork("bench/load/measured-serve.ts", [...args, "--port", "0", "--log-level", "error"], {
    cwd: ROOT,
    execArgv: ["--import", "tsx", "--expose-gc"],
    stdio: ["ignore", "pipe", "inherit", "ipc"],
  });
  let out = "";
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => {
      out += d.toString();
      const match = /at (http:\/\/\S+)\/v1/.exec(out);
      if (match?.[1]) resolve(match[1]);
    });
    child.once("exit", (code) => reject(new Error(`${name} exited early (${code}): ${out}`)));
  });
  return {
    name,
    url,
    async memory() {
      const reply = once(child, "message");
      child.send("memory");
      return (await reply)[0] as NodeJS.MemoryUsage;
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      await once(child, "exit");
    },
  };
}

const letters = (n: number): string => Array.from({ length: n }, () => String.fromCharCode(97 + rng.int(26))).join("");

/** Runs `count` tasks, `concurrency` at a time. */
async function pool(count: number, concurrency: number, task: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await task(next++);
    }),
  );
}

type Statuses = Map<string, number>;
const statuses = new Map<string, Statuses>();
function count(path: string, status: number | string): void {
  const byStatus = statuses.get(path) ?? new Map<string, number>();
  statuses.set(path, byStatus);
  byStatus.set(String(status), (byStatus.get(String(status)) ?? 0) + 1);
}

async function post(server: MeasuredServer, path: string, body: unknown, label: string): Promise<void> {
  try {
    const res = await fetch(`${server.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    await res.arrayBuffer();
    count(label, res.status);
  } catch (error) {
    count(label, (error as Error).name);
  }
}

/**
 * A disaggregated stream the client drops 0–20 ms after sending, often while its prompt's KV is
 * exported and not yet imported: the export is left for its TTL (exports are capped meanwhile).
 */
async function abandon(server: MeasuredServer): Promise<void> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), rng.int(20));
  try {
    const res = await fetch(`${server.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MOCKER, prompt: letters(400 + rng.int(1200)), max_tokens: 64, stream: true }),
      signal: controller.signal,
    });
    count("abandoned disaggregated stream", res.status);
  } catch (error) {
    count("abandoned disaggregated stream", (error as Error).name);
  }
  await new Promise((resolve) => setTimeout(resolve, 20));
  clearTimeout(timer);
  controller.abort();
}

/** A made-up JSON schema: a few properties of random names and types, so each compiles a new grammar. */
function randomSchema(): Record<string, unknown> {
  const types = ["string", "integer", "boolean", "number"];
  const properties = Object.fromEntries(
    Array.from({ length: 1 + rng.int(4) }, () => [letters(3 + rng.int(6)), { type: types[rng.int(types.length)] }]),
  );
  return { type: "object", properties, required: Object.keys(properties) };
}

async function round(mocker: MeasuredServer, llama: MeasuredServer): Promise<void> {
  await pool(200, 8, () =>
    post(mocker, "/v1/completions", { model: `made-up-${letters(12)}`, prompt: "hi", max_tokens: 2 }, "random model name"),
  );
  await pool(200, 8, (i) =>
    post(
      mocker,
      "/v1/completions",
      {
        model: MOCKER,
        prompt: letters(300 + rng.int(1700)),
        max_tokens: 4,
        // Every other request carries the longest stop list accepted: 4 strings of 512 characters.
        ...(i % 2 === 0 ? { stop: Array.from({ length: 4 }, () => letters(512)) } : {}),
      },
      i % 2 === 0 ? "random prompt, 4 stops of 512 chars" : "random prompt",
    ),
  );
  await pool(20, 4, (i) =>
    post(
      mocker,
      "/v1/completions",
      { model: MOCKER, prompt: "hi", max_tokens: 2, stop: i % 2 ? Array.from({ length: 64 }, () => "x") : [letters(100_000)] },
      "stop list over the cap",
    ),
  );
  await pool(40, 8, () => abandon(mocker));
  await pool(60, 2, () =>
    post(
      llama,
      "/v1/completions",
      {
        model: "tiny",
        prompt: "Give me JSON:",
        max_tokens: 4,
        response_format: { type: "json_schema", json_schema: { name: "random", schema: randomSchema() } },
      },
      "random JSON schema (llama.cpp)",
    ),
  );
}

async function seriesCount(server: MeasuredServer): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).length;
}

const mib = (b: number): string => (b / 2 ** 20).toFixed(1);
const mocker = await startMeasured("mocker", [
  "--engine",
  "mocker",
  "--speedup-ratio",
  "1000000",
  "--prefill",
  "1",
  "--decode",
  "1",
  "--kv-blocks",
  "1024",
]);
const llama = await startMeasured("llamacpp", ["--engine", "llamacpp", "--model-name", "tiny", "--sequences", "2"]);
try {
  console.log(`memory under growth paths — ${machine()}; ${ROUNDS} rounds\n`);
  console.log(
    "| round | requests | mocker heap (MiB) | mocker RSS (MiB) | mocker /metrics series | llama.cpp heap (MiB) | llama.cpp RSS (MiB) |",
  );
  console.log("|---:|---:|---:|---:|---:|---:|---:|");
  const started = performance.now();
  const rows: { heap: number; rss: number; series: number; llamaHeap: number; llamaRss: number }[] = [];
  for (let r = 0; r <= ROUNDS; r++) {
    if (r > 0) await round(mocker, llama);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const [m, l, series] = await Promise.all([mocker.memory(), llama.memory(), seriesCount(mocker)]);
    rows.push({ heap: m.heapUsed, rss: m.rss, series, llamaHeap: l.heapUsed, llamaRss: l.rss });
    const sent = [...statuses.values()].reduce((a, s) => a + [...s.values()].reduce((x, y) => x + y, 0), 0);
    console.log(`| ${r} | ${sent} | ${mib(m.heapUsed)} | ${mib(m.rss)} | ${series} | ${mib(l.heapUsed)} | ${mib(l.rss)} |`);
  }
  console.log("\nanswers by request kind:");
  for (const [label, byStatus] of statuses) {
    console.log(`  ${label}: ${[...byStatus].map(([status, n]) => `${status} × ${n}`).join(", ")}`);
  }
  const second = rows[1];
  const last = rows.at(-1);
  if (second && last && rows.length > 2) {
    const pct = (a: number, b: number) => `${((100 * (b - a)) / a).toFixed(1)}%`;
    console.log(
      `\nfrom round 1 to round ${ROUNDS}: mocker heap ${pct(second.heap, last.heap)}, RSS ${pct(second.rss, last.rss)}, ` +
        `series ${second.series} → ${last.series}; llama.cpp heap ${pct(second.llamaHeap, last.llamaHeap)}, RSS ${pct(second.llamaRss, last.llamaRss)}`,
    );
  }
  console.log(`(${((performance.now() - started) / 1000).toFixed(0)} s)`);
} finally {
  await Promise.all([mocker.stop(), llama.stop()]);
}
