import assert from "node:assert/strict";
import { test } from "node:test";
import { transferContract } from "./contracts/transfer-contract.js";
import { backendNames } from "./descriptors.js";
import { TransferAgent } from "./transfer-agent.js";

async function pair(remoteMedium: "memory" | "file" | "object", placement: "in-process" | "same-host" | "other-host") {
  const local = await TransferAgent.create();
  const remote = await TransferAgent.create();
  // Peers added from metadata are reached as remote processes would be.
  if (placement === "same-host") local.addRemote(remote.metadata, { forceRemote: true });
  if (placement === "other-host") local.addRemote({ ...remote.metadata, hostId: "another-host" }, { forceRemote: true });
  return {
    local,
    remote,
    remoteMedium,
    async close() {
      await local.close();
      await remote.close();
    },
  };
}

transferContract("memory", () => pair("memory", "in-process"));
transferContract("file", () => pair("file", "in-process"));
transferContract("shm", () => pair("file", "same-host"));
transferContract("tcp", () => pair("memory", "other-host"));
transferContract("object", () => pair("object", "in-process"));
transferContract("tcp", () => pair("object", "other-host"), "tcp to an object region");
transferContract("tcp", () => pair("file", "other-host"), "tcp to a file region");

test("calibration measures a positive α and bandwidth for every backend, keeping configured ones", async () => {
  const configured = { alphaMs: 1, bytesPerMs: 1000 };
  const agent = await TransferAgent.create({ costModels: { tcp: configured } });
  try {
    const models = await agent.calibrate();
    for (const backend of backendNames) {
      const model = models[backend];
      assert.ok(model.alphaMs >= 0 && Number.isFinite(model.alphaMs), `${backend} α ${model.alphaMs}`);
      assert.ok(model.bytesPerMs > 0 && Number.isFinite(model.bytesPerMs), `${backend} bandwidth ${model.bytesPerMs}`);
    }
    assert.deepEqual(models.tcp, configured);
    assert.ok(models.memory.bytesPerMs > models.file.bytesPerMs / 100, "memcpy is not slower than file reads by orders");
  } finally {
    await agent.close();
  }
});
