import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import type { WorkerRole } from "../../protocol/index.js";
import { card } from "../../runtime/contracts/discovery-contract.js";
import type { InstanceRecord } from "../../runtime/index.js";
import { isRunning } from "./adopted-worker.js";
import { LocalConnector, type LocalConnectorOptions } from "./local-connector.js";
import type { LocalWorkerExit } from "./local-worker.js";
import { scalingConnectorContract } from "./scaling-connector-contract.js";

// A stand-in for `armature worker` that behaves as it does towards its owner: the ready line after
// start-up, and on SIGTERM a drain (here a pause) and exit 0. STUB_MODE changes that for one test.
const STUB = `
const mode = process.env.STUB_MODE ?? "drain";
console.log("starting");
setTimeout(() => {
  console.log("armature worker stub-" + process.pid + ", stub-" + process.pid + "b serving 'stub' (stub) on nats://127.0.0.1:1");
  if (mode === "crash") setTimeout(() => process.exit(3), 50);
}, 30);
process.on("SIGTERM", () => {
  if (mode === "stubborn") return console.error("ignoring SIGTERM");
  setTimeout(() => process.exit(0), 100);
});
setInterval(() => {}, 1000);
`;

let dir: string;
let stub: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "armature-local-connector-"));
  stub = join(dir, "stub-worker.mjs");
  await writeFile(stub, STUB);
});
after(() => rm(dir, { recursive: true, force: true }));

function connect(options: Partial<LocalConnectorOptions> = {}, mode = "drain"): Promise<LocalConnector> {
  return LocalConnector.create({
    command: [process.execPath, stub],
    workerArgs: { prefill: [], decode: [] },
    env: { ...process.env, STUB_MODE: mode },
    ...options,
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function until(predicate: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await predicate())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await sleep(20);
  }
}

scalingConnectorContract("local", async () => {
  const connector = await connect();
  return {
    connector,
    roles: ["prefill", "decode"],
    missingRole: "aggregated",
    settleMs: 1_500,
    passTime: sleep,
    close: () => connector.close(),
  };
});

test("scale-down stops the newest worker with SIGTERM and waits for it to drain and exit 0", async () => {
  const exits: LocalWorkerExit[] = [];
  const connector = await connect({ onExit: (e) => exits.push(e) });
  try {
    await connector.scale("decode", 2);
    await until(async () => (await connector.replicas("decode")).ready === 2);
    const [oldest, newest] = connector.workers("decode");
    assert.deepEqual(newest?.instanceIds, [`stub-${newest?.pid}`, `stub-${newest?.pid}b`], "ids from the ready line");
    await connector.scale("decode", 1);
    assert.deepEqual(
      connector.workers("decode").map((w) => [w.name, w.state]),
      [
        [oldest?.name, "ready"],
        [newest?.name, "draining"],
      ],
    );
    assert.deepEqual(await connector.replicas("decode"), { desired: 1, ready: 1 });
    const [exit] = await connector.drained();
    assert.deepEqual(exit, {
      name: newest?.name,
      role: "decode",
      pid: newest?.pid,
      code: 0,
      signal: null,
      requested: true,
      killed: false,
    });
    assert.deepEqual(exits, [exit]);
  } finally {
    await connector.close();
  }
});

test("a worker that does not exit within the deadline is killed with SIGKILL, and that is reported", async () => {
  const exits: LocalWorkerExit[] = [];
  const warnings: unknown[] = [];
  const logger = { warn: (o: unknown) => warnings.push(o), info() {}, debug() {}, error() {}, child: () => logger };
  const connector = await connect({ stopTimeoutMs: 300, onExit: (e) => exits.push(e), logger }, "stubborn");
  await connector.scale("decode", 1);
  await until(async () => (await connector.replicas("decode")).ready === 1);
  const started = Date.now();
  await connector.close();
  assert.ok(Date.now() - started >= 300, "it had its deadline");
  assert.equal(exits.length, 1);
  assert.deepEqual([exits[0]?.signal, exits[0]?.killed, exits[0]?.requested], ["SIGKILL", true, true]);
  assert.equal(warnings.length, 1);
});

test("a worker that exits by itself leaves the pool, is reported, and ready falls below desired", async () => {
  const exits: LocalWorkerExit[] = [];
  const connector = await connect({ onExit: (e) => exits.push(e) }, "crash");
  try {
    await connector.scale("prefill", 1);
    await until(() => exits.length === 1);
    assert.deepEqual([exits[0]?.code, exits[0]?.requested], [3, false]);
    assert.deepEqual(await connector.replicas("prefill"), { desired: 1, ready: 0 });
  } finally {
    await connector.close();
  }
});

test("every line a worker prints reaches onLine with the worker's name, stdout and stderr", async () => {
  const lines: string[] = [];
  const connector = await connect(
    { stopTimeoutMs: 200, onLine: (line, worker) => lines.push(`${worker.name}: ${line}`) },
    "stubborn",
  );
  await connector.scale("prefill", 1);
  await until(() => lines.length >= 2);
  const stopping = connector.close();
  await until(() => lines.includes("prefill-1: ignoring SIGTERM"));
  assert.ok(lines.includes("prefill-1: starting"));
  await stopping;
});

test("close stops every pool's workers and waits for all of them", async () => {
  const exits: LocalWorkerExit[] = [];
  const connector = await connect({ onExit: (e) => exits.push(e) });
  await connector.scale("prefill", 1);
  await connector.scale("decode", 2);
  await until(async () => {
    const counts = await Promise.all((["prefill", "decode"] as WorkerRole[]).map((r) => connector.replicas(r)));
    return counts.every((c) => c.ready === c.desired);
  });
  await connector.close();
  assert.deepEqual(exits.map((e) => e.code).sort(), [0, 0, 0]);
  assert.deepEqual(connector.workers("decode"), []);
});

test("adopt: the live workers another planner's connector started on this host join their pools and drain like children", async () => {
  // Two orphans of a dead planner (spawned here, detached, as that planner did), one record each.
  const orphan = () => spawn(process.execPath, [stub], { detached: true, stdio: "ignore", env: process.env });
  const [a, b] = [orphan(), orphan()];
  const record = (id: string, role: WorkerRole, pid: number, host = hostname()): InstanceRecord => ({
    id,
    role,
    model: "m",
    card: { ...card, role },
    startedBy: { host, pid },
  });
  const connector = await connect();
  try {
    const adopted = connector.adopt([
      record("a1", "decode", a.pid as number),
      record("a2", "decode", a.pid as number),
      record("b1", "prefill", b.pid as number),
      // Not adopted: another host's, a dead one's, one no local connector started, a role not scaled.
      record("x", "decode", b.pid as number, "elsewhere"),
      record("y", "decode", 2 ** 31 - 2),
      { ...record("z", "decode", 1), startedBy: undefined },
      record("w", "aggregated", b.pid as number),
    ]);
    assert.equal(adopted, 2, "two processes (a's two instances are one)");
    assert.deepEqual(await connector.replicas("decode"), { desired: 1, ready: 1 });
    assert.deepEqual(await connector.replicas("prefill"), { desired: 1, ready: 1 });
    assert.deepEqual(
      connector.workers("decode").map((w) => [w.pid, w.instanceIds]),
      [[a.pid, ["a1", "a2"]]],
    );
    assert.equal(connector.adopt([record("a1", "decode", a.pid as number)]), 0, "already adopted");
    // Scaled down, the adopted worker gets SIGTERM, drains (the stub exits 0 after 100 ms) and is gone.
    await connector.scale("decode", 0);
    const [exit] = await connector.drained();
    assert.deepEqual([exit?.pid, exit?.requested, exit?.killed, exit?.code], [a.pid, true, false, null]);
    assert.equal(isRunning(a.pid as number), false);
    assert.deepEqual(await connector.replicas("decode"), { desired: 0, ready: 0 });
  } finally {
    await connector.close();
    for (const child of [a, b]) if (isRunning(child.pid as number)) process.kill(child.pid as number, "SIGKILL");
  }
  assert.equal(isRunning(b.pid as number), false, "close drained the adopted prefill worker too");
});
