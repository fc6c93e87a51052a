import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { test } from "node:test";
import { createSharedDir, sweepDeadSharedDirs } from "./shared-dir.js";
import { TransferAgent } from "./transfer-agent.js";

test("the shared folders of dead agent processes are swept; live ones and strangers stay", async () => {
  const parent = await mkdtemp(join(tmpdir(), "armature-sweep-"));
  const dead = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"]).stdout.toString();
  const deadDir = join(parent, "armature-agent-dead");
  await mkdir(deadDir);
  await writeFile(join(deadDir, ".owner-pid"), dead);
  await writeFile(join(deadDir, "kv-1.state"), "exported KV");
  const liveDir = join(parent, "armature-agent-live");
  await createSharedDir(liveDir);
  const strangerDir = join(parent, "armature-not-an-agent");
  await mkdir(strangerDir);
  assert.deepEqual(sweepDeadSharedDirs(parent), [deadDir]);
  assert.equal(existsSync(deadDir), false);
  assert.equal(existsSync(liveDir), true);
  assert.equal(existsSync(strangerDir), true);
});

// Regression: the folder was /dev/shm/armature-NAME, so two processes on a host with a worker of one
// id (two test files, two deployments) shared it, and the first to close removed the other's files.
test("two agents of one name in two processes keep apart: each has its own folder and closing one leaves the other's", async () => {
  const name = `same-${process.pid}`;
  const script = `
    const { TransferAgent } = await import(${JSON.stringify(new URL("./transfer-agent.ts", import.meta.url).href)});
    const agent = await TransferAgent.create({ name: ${JSON.stringify(name)} });
    const { writeFile } = await import("node:fs/promises");
    await writeFile(agent.sharedPath("kv-other.state"), "the other process's export");
    process.stdout.write(agent.sharedDir + "\\n");
    process.stdin.resume();
    process.stdin.on("end", async () => { await agent.close(); process.exit(0); });
  `;
  const other = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  let agent: TransferAgent | undefined;
  try {
    const [line] = (await once(other.stdout, "data")) as [Buffer];
    const otherDir = line.toString().trim();
    agent = await TransferAgent.create({ name });
    const ownDir = agent.sharedDir;
    await writeFile(agent.sharedPath("kv-mine.state"), "this process's export");
    await agent.close();
    assert.equal(existsSync(ownDir), false);
    assert.equal(readFileSync(join(otherDir, "kv-other.state"), "utf8"), "the other process's export");
    assert.notEqual(ownDir, otherDir);
    assert.equal(basename(ownDir), `armature-${name}-${process.pid}`);
  } finally {
    await agent?.close();
    other.stdin.end();
    await once(other, "exit");
  }
});
