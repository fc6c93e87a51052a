import assert from "node:assert/strict";
import { mkdir, mkdtemp, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { TransferDescriptor } from "./descriptors.js";
import { TransferAgent } from "./transfer-agent.js";

// Regression: the shm backend opened whatever path a peer's descriptor named (descriptors arrive on
// the request plane), so one forged handoff read any file the decode worker could.
test("a descriptor whose path leaves the peer's shared folder is refused and reads nothing", async () => {
  const local = await TransferAgent.create();
  const remote = await TransferAgent.create();
  local.addRemote(remote.metadata, { forceRemote: true });
  const outside = await mkdtemp(join(tmpdir(), "armature-outside-"));
  const secretFile = join(outside, "secret.txt");
  await writeFile(secretFile, "not for peers, not for anyone");
  await symlink(secretFile, remote.sharedPath("link.state"));
  await mkdir(remote.sharedPath("a-folder"));
  const inOwnFolder = local.sharedPath("mine.state");
  await writeFile(inOwnFolder, "the decode worker's own file");
  const forged = (path: string, length = 10): TransferDescriptor => ({
    agent: remote.name,
    region: "kv-forged",
    offset: 0,
    length,
    medium: "file",
    path,
  });
  try {
    for (const path of [
      secretFile,
      join(remote.sharedDir, "..", "..", secretFile),
      remote.sharedPath("link.state"),
      remote.sharedPath("a-folder"),
      inOwnFolder,
      "relative/path.state",
    ]) {
      const landing = local.registerMemory(Buffer.alloc(10));
      await assert.rejects(
        local.read([local.describe(landing.id)], [forged(path)], { backend: "shm" }),
        { code: "TRANSFER_FAILED", message: /outside|not a regular file|absolute/ },
        path,
      );
      assert.ok(landing.medium === "memory" && landing.buffer.equals(Buffer.alloc(10)), path);
    }
    // A file the peer really registered in its own folder is still read.
    await writeFile(remote.sharedPath("real.state"), "exported KV");
    const region = await remote.registerFile(remote.sharedPath("real.state"));
    const landing = local.registerMemory(Buffer.alloc(region.length));
    const result = await local.read([local.describe(landing.id)], [remote.describe(region.id)]);
    assert.equal(result.backend, "shm");
    assert.ok(landing.medium === "memory" && landing.buffer.toString() === "exported KV");
  } finally {
    await local.close();
    await remote.close();
  }
});
