import assert from "node:assert/strict";
import { test } from "node:test";
import { refuseFrontendFlags, refuseSidecarFlags } from "./distributed-commands.js";

test("a worker refuses the frontend's router, queue and batch flags by name, and takes its own", () => {
  for (const argv of [
    ["--batch-dir", "/tmp/b"],
    ["--engine", "mocker", "--priority-reserve=0.5"],
    ["--router-queue-size", "8"],
    ["--kv-overlap-weight", "64"],
    ["--kv-exclusive-factor", "4"],
    ["--engine", "mocker", "--router-temperature=0.1"],
    ["--lower-tier-weight", "0.5"],
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

test("a frontend or router refuses the engine-server flags by name: it drives no engine server", () => {
  for (const [command, argv] of [
    ["frontend", ["--tokenizer", "/models/m"]],
    ["frontend", ["--port", "8000", "--prefill-engine-url=http://h:1"]],
    ["router", ["--engine-url", "http://h:1"]],
    ["router", ["--kv-events-endpoint", "tcp://h:5557"]],
    ["frontend", ["--lora", "sea=/a/sea.gguf"]],
  ] as const) {
    const flag = (argv.find((a) => a.startsWith("--") && a !== "--port") as string).split("=")[0] as string;
    assert.throws(() => refuseSidecarFlags(command, argv), {
      code: "CONFIG_INVALID",
      message: new RegExp(`^${flag} is for armature worker \\(or serve\\): .* armature ${command} does not run`),
    });
  }
  refuseSidecarFlags("frontend", ["--port", "8000", "--router", "kv", "--model-name", "tokenizer"]);
});
