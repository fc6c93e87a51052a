import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import OpenAI from "openai";
import { freePort } from "../helpers/nats-server.js";

test("armature up starts nats, etcd, workers, a router and a frontend from a cluster file, and Ctrl-C stops them all", async () => {
  const [natsPort, etcdPort, etcdPeer, httpPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const dir = await mkdtemp(join(tmpdir(), "armature-up-"));
  const file = join(dir, "cluster.yaml");
  await writeFile(
    file,
    [
      `nats: { port: ${natsPort} }`,
      `etcd: { port: ${etcdPort}, peerPort: ${etcdPeer} }`,
      "frontend:",
      `  port: ${httpPort}`,
      "  router: remote",
      "  log-level: warn",
      "routers:",
      "  log-level: warn",
      "workers:",
      "  - engine: mocker",
      "    count: 2",
      "    speedup-ratio: 100",
      "    log-level: warn",
    ].join("\n"),
  );
  const up = spawn(process.execPath, ["bin/armature.js", "up", file], { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  up.stdout?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  up.stderr?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  try {
    const deadline = Date.now() + 60_000;
    // Processes start side by side: the router may be ready after the frontend (which routes with
    // its own policy meanwhile), so wait for both banners.
    const ready = (): boolean =>
      /\[frontend\] armature frontend .* at http/.test(output) && /\[router-1\] armature router/.test(output);
    while (!ready()) {
      if (Date.now() > deadline || up.exitCode !== null) throw new Error(`cluster did not come up:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${httpPort}/v1`, apiKey: "unused", maxRetries: 0 });
    const result = await client.completions.create({ model: "armature-mocker", prompt: "hi", max_tokens: 3 });
    assert.equal(result.choices.length, 1);
    assert.match(output, /\[worker-1\] armature worker/);
    assert.match(output, /\[worker-2\] armature worker/);
    assert.match(output, /\[router-1\] armature router/);
  } finally {
    up.kill("SIGINT");
    const [code] = await once(up, "exit");
    assert.equal(code, 0, output);
  }
  assert.match(output, /armature up: stopped/);
});
