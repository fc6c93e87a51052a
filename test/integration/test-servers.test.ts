import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { freePort } from "../helpers/free-port.js";
import { startNatsServer } from "../helpers/nats-server.js";

// The harness that starts real servers for the suite: a server that cannot bind says why.
test("nats-server on a port another process holds fails at once and says what nats-server printed", async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, "127.0.0.1", resolve));
  const { port } = holder.address() as { port: number };
  try {
    await assert.rejects(startNatsServer({ port, monitor: await freePort() }), (error: Error) => {
      assert.match(error.message, /^nats-server exited \(code \d+\) before it became healthy: .*address already in use/);
      return true;
    });
  } finally {
    await new Promise<void>((resolve) => holder.close(() => resolve()));
  }
});

test("nats-server chooses fresh ports when none are given, and stops by its pid", async () => {
  const server = await startNatsServer();
  try {
    assert.equal(server.url, `nats://127.0.0.1:${server.ports.port}`);
    assert.ok((await fetch(`http://127.0.0.1:${server.ports.monitor}/healthz`)).ok);
  } finally {
    await server.stop();
  }
  assert.throws(() => process.kill(server.pid, 0), { code: "ESRCH" });
});
