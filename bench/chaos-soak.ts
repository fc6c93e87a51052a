// Chaos soak: mixed streaming and unary load on `armature frontend --router remote` + `armature
// router` + 4 mocker workers over real nats-server and etcd, while workers are SIGKILLed and
// restarted, nats-server restarts on the same port, clients disconnect mid-stream and read slowly.
// Every request must end completed or with a clean error; none may hang or be lost.
// Usage: node --import tsx bench/chaos-soak.ts [--minutes 10] [--concurrency 6] [--slow-readers 2] [--seed 1] [--json FILE]
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SeededRandom } from "../src/engines/index.js";
import { waitForInstances } from "../test/helpers/cluster-servers.js";
import { rssBytes, SoakCluster } from "./chaos/soak-cluster.js";
import { type Outcome, type RequestKind, RequestMix, sendSoakRequest } from "./chaos/soak-requests.js";
import { machine } from "./load/processes.js";

const { values } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    concurrency: { type: "string", default: "6" },
    "slow-readers": { type: "string", default: "2" },
    seed: { type: "string", default: "1" },
    json: { type: "string" },
  },
});
const WORKERS = 4;
const SPEEDUP_RATIO = 10;
const REQUEST_TIMEOUT_S = 30;
const CLIENT_TIMEOUT_MS = 90_000;
const MODEL = "armature-mocker";
/** Pause between one client's requests: keeps the load moderate on a 2-core machine. */
const THINK_MS = 100;
const durationMs = Number(values.minutes) * 60_000;
const concurrency = Number(values.concurrency);
const slowReaders = Number(values["slow-readers"]);
const seed = Number(values.seed);
// Chaos starts after a warm-up. RSS is first read at 60 s: a process lets go of its start-up
// garbage (~50 MiB) within its first minute. The last stretch has no chaos so the cluster recovers.
const warmupMs = Math.min(15_000, durationMs * 0.15);
const rssBaselineMs = Math.min(60_000, durationMs / 2);
const quietTailMs = Math.min(20_000, durationMs * 0.1);

type Tally = Record<Outcome["type"] | "sent", number>;
const emptyTally = (): Tally => ({ sent: 0, completed: 0, failed: 0, hung: 0, lost: 0, disconnected: 0 });
const totals = emptyTally();
const byKind = new Map<RequestKind, Tally>();
const failures = new Map<string, number>();
const problems: { atS: number; type: "hung" | "lost"; detail: string }[] = [];
const chaos: { atS: number; action: string; detail: string }[] = [];
const rssTimeline: { atS: number; mib: Record<string, number> }[] = [];
let completionTokens = 0;

let t0 = performance.now();
const elapsedS = (): number => Math.round((performance.now() - t0) / 100) / 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const mib = (bytes: number | undefined): number => (bytes === undefined ? Number.NaN : Math.round(bytes / 2 ** 17) / 8);

function record(kind: RequestKind, outcome: Outcome): void {
  const kindTally = byKind.get(kind) ?? emptyTally();
  byKind.set(kind, kindTally);
  for (const tally of [totals, kindTally]) tally[outcome.type]++;
  if (outcome.type === "completed") completionTokens += outcome.completionTokens;
  if (outcome.type === "failed") failures.set(outcome.key, (failures.get(outcome.key) ?? 0) + 1);
  if (outcome.type === "hung" || outcome.type === "lost")
    problems.push({ atS: elapsedS(), type: outcome.type, detail: outcome.detail });
}

/** One client: requests one after another with a short think time; a slow-reader lane sends only those. */
async function clientLoop(cluster: SoakCluster, mix: RequestMix, endAt: number, slow: boolean): Promise<void> {
  while (performance.now() < endAt) {
    const kind: RequestKind = slow ? "slow-reader" : mix.kind();
    totals.sent++;
    const kindTally = byKind.get(kind) ?? emptyTally();
    byKind.set(kind, kindTally);
    kindTally.sent++;
    const outcome = await sendSoakRequest(kind, mix, { baseUrl: cluster.url, model: MODEL, clientTimeoutMs: CLIENT_TIMEOUT_MS });
    record(kind, outcome);
    // A failing cluster answers at once: back off a little rather than spin.
    await sleep(outcome.type === "failed" || outcome.type === "lost" ? 200 : THINK_MS);
  }
}

/** Worker kills every 30–60 s (slot 0 is spared, so one worker's RSS spans the run), nats restarts every ~2 min. */
function chaosPlan(rng: SeededRandom): { atMs: number; action: "kill-worker" | "restart-nats" }[] {
  const plan: { atMs: number; action: "kill-worker" | "restart-nats" }[] = [];
  const lastMs = durationMs - quietTailMs;
  for (let at = warmupMs + 5_000 + rng.int(10_000); at < lastMs; at += 30_000 + rng.int(30_000)) {
    plan.push({ atMs: at, action: "kill-worker" });
  }
  for (let at = warmupMs + 30_000 + rng.int(20_000); at < lastMs; at += 100_000 + rng.int(40_000)) {
    plan.push({ atMs: at, action: "restart-nats" });
  }
  return plan.sort((a, b) => a.atMs - b.atMs);
}

async function runChaos(cluster: SoakCluster, rng: SeededRandom): Promise<void> {
  for (const step of chaosPlan(rng)) {
    const wait = step.atMs - (performance.now() - t0);
    if (wait > 0) await sleep(wait);
    if (step.action === "kill-worker") {
      const slot = 1 + rng.int(WORKERS - 1);
      const pid = await cluster.killWorker(slot);
      chaos.push({ atS: elapsedS(), action: "worker SIGKILL", detail: `worker-${slot} pid ${pid}` });
      await sleep(1_000 + rng.int(2_000));
      const started = performance.now();
      const member = await cluster.startWorker(slot);
      const readyS = ((performance.now() - started) / 1000).toFixed(1);
      chaos.push({
        atS: elapsedS(),
        action: "worker restarted",
        detail: `worker-${slot} pid ${member.pid}, ready in ${readyS} s`,
      });
    } else {
      const downMs = 1_000 + rng.int(2_000);
      chaos.push({ atS: elapsedS(), action: "nats-server stop", detail: `down for ${downMs} ms` });
      const { newPid } = await cluster.restartNats(downMs);
      chaos.push({ atS: elapsedS(), action: "nats-server restarted", detail: `same port, pid ${newPid}` });
    }
  }
}

function rssSnapshot(cluster: SoakCluster): Map<string, { pid: number; bytes: number | undefined }> {
  return new Map(cluster.members().map((m) => [m.name, { pid: m.pid, bytes: rssBytes(m.pid) }]));
}

async function sampleRss(cluster: SoakCluster, endAt: number): Promise<void> {
  while (performance.now() < endAt) {
    rssTimeline.push({
      atS: elapsedS(),
      mib: Object.fromEntries([...rssSnapshot(cluster)].map(([name, r]) => [name, mib(r.bytes)])),
    });
    await sleep(Math.min(30_000, endAt - performance.now()));
  }
}

const cluster = await SoakCluster.start({
  workers: WORKERS,
  speedupRatio: SPEEDUP_RATIO,
  requestTimeoutS: REQUEST_TIMEOUT_S,
  elapsedS,
});
process.once("SIGINT", () => {
  void cluster.stop().finally(() => process.exit(130));
});
// Whatever ends this process (an exception, a closed stdout), the cluster does not outlive it.
process.once("exit", () => cluster.killNow());
let exitCode = 1;
try {
  const listed = await waitForInstances(cluster.url, WORKERS, 60_000);
  if (listed.length < WORKERS) throw new Error(`the frontend lists ${listed.length} of ${WORKERS} workers after 60 s`);
  console.log(
    `chaos soak — ${machine()}; ${values.minutes} min, ${concurrency} clients + ${slowReaders} slow readers, frontend at ${cluster.url}`,
  );
  t0 = performance.now();
  const endAt = t0 + durationMs;
  const mix = new RequestMix(seed);
  const load = Promise.all(
    Array.from({ length: concurrency + slowReaders }, (_, i) => clientLoop(cluster, mix, endAt, i >= concurrency)),
  );
  const sampling = sampleRss(cluster, endAt);
  let rssStart = new Map<string, { pid: number; bytes: number | undefined }>();
  const baseline = sleep(rssBaselineMs).then(() => {
    rssStart = rssSnapshot(cluster);
  });
  await runChaos(cluster, new SeededRandom(seed + 1));
  await Promise.all([load, sampling, baseline]);
  await sleep(5_000); // let the last responses' buffers go before the final reading
  const rssEnd = rssSnapshot(cluster);
  const report = buildReport(rssStart, rssEnd);
  printReport(report);
  if (values.json) await writeFile(values.json, `${JSON.stringify(report, null, 2)}\n`);
  if (totals.hung + totals.lost + cluster.crashes.length > 0) {
    const dir = await mkdtemp(join(tmpdir(), "armature-chaos-soak-logs-"));
    await cluster.saveLogs(dir);
    console.log(`\nevery process's output (log level warn): ${dir}`);
  }
  exitCode = totals.hung > 0 || totals.lost > 0 || cluster.crashes.length > 0 ? 1 : 0;
} finally {
  await cluster.stop();
}
process.exitCode = exitCode;

function buildReport(
  rssStart: Map<string, { pid: number; bytes: number | undefined }>,
  rssEnd: Map<string, { pid: number; bytes: number | undefined }>,
) {
  const rss = [...rssEnd].map(([name, end]) => {
    const start = rssStart.get(name);
    const samePid = start?.pid === end.pid;
    const growth =
      samePid && start?.bytes && end.bytes !== undefined
        ? Math.round((1000 * (end.bytes - start.bytes)) / start.bytes) / 10
        : null;
    return {
      process: name,
      start_pid: start?.pid ?? null,
      start_mib: mib(start?.bytes),
      end_pid: end.pid,
      end_mib: mib(end.bytes),
      growth_percent: growth,
      note: samePid ? undefined : "restarted during the soak: start and end are different processes",
    };
  });
  return {
    machine: machine(),
    minutes: Number(values.minutes),
    concurrency,
    slow_readers: slowReaders,
    think_ms: THINK_MS,
    rss_baseline_s: rssBaselineMs / 1000,
    seed,
    workers: WORKERS,
    speedup_ratio: SPEEDUP_RATIO,
    request_timeout_s: REQUEST_TIMEOUT_S,
    client_timeout_s: CLIENT_TIMEOUT_MS / 1000,
    requests: totals,
    by_kind: Object.fromEntries(byKind),
    failed_by_code: Object.fromEntries([...failures].sort((a, b) => b[1] - a[1])),
    completion_tokens: completionTokens,
    hung_or_lost: problems.slice(0, 50).map((p) => {
      const requestId = /request ([0-9a-f-]{36})/.exec(p.detail)?.[1];
      return { ...p, logs: requestId ? cluster.logLines(requestId) : [] };
    }),
    crashes: cluster.crashes,
    rss,
    rss_timeline_mib: rssTimeline,
    chaos,
  };
}

function printReport(report: ReturnType<typeof buildReport>): void {
  const r = report.requests;
  console.log(
    `\nrequests: sent ${r.sent}, completed ${r.completed}, failed cleanly ${r.failed}, hung ${r.hung}, lost ${r.lost}, `,
  );
  console.log(`disconnected by the client (intended) ${r.disconnected}; completion tokens ${report.completion_tokens}`);
  console.log("\n| kind | sent | completed | failed | hung | lost | disconnected |\n|---|---:|---:|---:|---:|---:|---:|");
  for (const [kind, t] of byKind) {
    console.log(`| ${kind} | ${t.sent} | ${t.completed} | ${t.failed} | ${t.hung} | ${t.lost} | ${t.disconnected} |`);
  }
  console.log("\nclean failures by status/code:");
  for (const [key, n] of Object.entries(report.failed_by_code)) console.log(`  ${key}: ${n}`);
  console.log(
    "\n| process | pid at start | RSS start (MiB) | pid at end | RSS end (MiB) | growth |\n|---|---:|---:|---:|---:|---:|",
  );
  for (const p of report.rss) {
    const growth = p.growth_percent === null ? "(restarted)" : `${p.growth_percent}%`;
    console.log(`| ${p.process} | ${p.start_pid} | ${p.start_mib} | ${p.end_pid} | ${p.end_mib} | ${growth} |`);
  }
  console.log("\nchaos actions:");
  for (const c of report.chaos) console.log(`  ${c.atS.toFixed(1)} s  ${c.action}: ${c.detail}`);
  for (const p of report.hung_or_lost) {
    console.log(`${p.type.toUpperCase()} at ${p.atS} s: ${p.detail}`);
    for (const line of p.logs) console.log(`    ${line}`);
  }
  for (const c of report.crashes)
    console.log(`CRASH ${c.name} pid ${c.pid} at ${c.atS} s (${c.code ?? c.signal}):\n${c.outputTail}`);
}
