import assert from "node:assert/strict";
import { test } from "node:test";
import { PrometheusMeter } from "../observability/index.js";
import { InvalidMessages } from "../runtime/index.js";
import { refuseMetricsPort, startMetricsEndpoint } from "./metrics-endpoint.js";

test("--metrics-port is refused by name where /metrics is on --port already", () => {
  refuseMetricsPort("serve", undefined);
  assert.throws(() => refuseMetricsPort("serve", 9100), {
    code: "CONFIG_INVALID",
    message: "--metrics-port is for armature worker: armature serve serves GET /metrics on --port",
  });
  assert.throws(
    () => refuseMetricsPort("frontend", 9100),
    /^ArmatureError: --metrics-port is for armature worker: armature frontend/,
  );
  assert.throws(() => refuseMetricsPort("router", 9100), /armature router serves no metrics yet/);
});

test("a taken --metrics-port stops the start, naming the flag; the endpoint answers /metrics and /health", async () => {
  const options = () => ({ host: "127.0.0.1", meter: new PrometheusMeter(), invalidMessages: new InvalidMessages() });
  const first = await startMetricsEndpoint({ ...options(), port: 0 });
  try {
    const port = Number(new URL(first.url).port);
    await assert.rejects(startMetricsEndpoint({ ...options(), port }), {
      code: "CONFIG_INVALID",
      message: new RegExp(`^port ${port} on 127\\.0\\.0\\.1 is already in use; choose another with --metrics-port`),
    });
    assert.equal((await fetch(`${first.url}/metrics`)).status, 200);
    assert.deepEqual(await (await fetch(`${first.url}/health`)).json(), { status: "ok" });
  } finally {
    await first.close();
  }
});
