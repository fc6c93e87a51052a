import assert from "node:assert/strict";
import { request } from "node:http";
import { test } from "node:test";
import { startArmature } from "../helpers/armature-process.js";
import { startClusterServers, waitForInstances } from "../helpers/cluster-servers.js";

test("a client that leaves mid-stream is not logged as a server error", async () => {
  // Regression: every client disconnect during a stream logged "stream failed after it started" at error level, with a stack.
  // Over NATS a cancelled call ends in the abort's error, which reaches the stream's error path.
  const servers = await startClusterServers();
  const worker = await startArmature(["worker", ...servers.flags, "--engine", "mocker"]);
  const server = await startArmature(["frontend", ...servers.flags, "--port", "0"]);
  try {
    await waitForInstances(server.url, 1);
    const payload = JSON.stringify({ model: "armature-mocker", prompt: "hello there", max_tokens: 500, stream: true });
    await new Promise<void>((resolve, reject) => {
      const req = request(
        `${server.url}/v1/completions`,
        { method: "POST", headers: { "content-type": "application/json" } },
        (res) => {
          res.once("data", () => {
            req.destroy();
            resolve();
          });
        },
      );
      req.on("error", (error) => (req.destroyed ? undefined : reject(error)));
      req.end(payload);
    });
    await new Promise((r) => setTimeout(r, 500));
    assert.doesNotMatch(server.output(), /"level":50/);
  } finally {
    await Promise.all([server.stop(), worker.stop()]);
    await servers.stop();
  }
});
