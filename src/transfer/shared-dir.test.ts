import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { createSharedDir, sweepDeadSharedDirs } from "./shared-dir.js";

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
