import assert from "node:assert/strict";
import { test } from "node:test";
import { refuseFrontendFlags } from "./distributed-commands.js";

test("a worker refuses the frontend's queue and batch flags by name, and takes its own", () => {
  for (const argv of [
    ["--batch-dir", "/tmp/b"],
    ["--engine", "mocker", "--priority-reserve=0.5"],
    ["--router-queue-size", "8"],
    ["--grpc-port", "9001"],
  ]) {
    const flag = (argv.find((a) => a.startsWith("--") && a !== "--engine") as string).split("=")[0] as string;
    assert.throws(() => refuseFrontendFlags(argv), {
      code: "CONFIG_INVALID",
      message: new RegExp(`^${flag} is for armature frontend`),
    });
  }
  refuseFrontendFlags(["--engine", "mocker", "--model-name", "batch-dir", "--workers", "2"]);
});
