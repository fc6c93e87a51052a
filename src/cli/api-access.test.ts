import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import { mkdtemp, writeFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import type { AccessControl } from "../frontend/index.js";
import { type Logger, PrometheusMeter } from "../observability/index.js";
import { createApiAccess } from "./api-access.js";

function decide(access: AccessControl, key: string): string {
  const req = { method: "GET", headers: { authorization: `Bearer ${key}` } } as unknown as IncomingMessage;
  return access.check(req, new EventEmitter() as unknown as ServerResponse, "/v1/models").kind;
}

function recordingLogger(lines: { level: string; fields: unknown; message?: string }[]): Logger {
  const at =
    (level: string) =>
    (fields: unknown, message?: string): void => {
      lines.push({ level, fields, message });
    };
  const logger: Logger = {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: () => logger,
  } as Logger;
  return logger;
}

test("no keys: no access control; --metrics-require-key alone is refused", () => {
  const meter = new PrometheusMeter();
  assert.equal(createApiAccess({ apiKeys: [], apiKeysFile: undefined, metricsRequireKey: false }, meter), undefined);
  assert.throws(
    () => createApiAccess({ apiKeys: [], apiKeysFile: undefined, metricsRequireKey: true }, meter),
    /--metrics-require-key needs API keys/,
  );
});

test("SIGHUP rereads the keys file; a bad file keeps the old keys and says why, without the key", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-keys-"));
  const file = join(dir, "keys.yaml");
  await writeFile(file, "- {key: sk-old-1, name: alice}\n");
  const meter = new PrometheusMeter();
  const api = createApiAccess({ apiKeys: ["sk-flag"], apiKeysFile: file, metricsRequireKey: false }, meter);
  assert.ok(api);
  const lines: { level: string; fields: unknown; message?: string }[] = [];
  const listenersBefore = process.listenerCount("SIGHUP");
  const stop = api.reloadOnHangup(recordingLogger(lines));
  try {
    assert.deepEqual([decide(api.access, "sk-old-1"), decide(api.access, "sk-flag")], ["granted", "granted"]);
    await writeFile(file, "- {key: sk-new-2, name: alice}\n");
    process.emit("SIGHUP", "SIGHUP");
    assert.deepEqual(
      [decide(api.access, "sk-old-1"), decide(api.access, "sk-new-2"), decide(api.access, "sk-flag")],
      ["denied", "granted", "granted"],
    );
    await writeFile(file, "- {key: sk-bad-3, name: alice, rpm: 1}\n");
    process.emit("SIGHUP", "SIGHUP");
    assert.equal(decide(api.access, "sk-new-2"), "granted");
    assert.equal(decide(api.access, "sk-bad-3"), "denied");
    const failure = lines.find((l) => l.level === "error");
    assert.ok(failure, JSON.stringify(lines));
    assert.match(JSON.stringify(failure.fields), /unknown field 'rpm'/);
    assert.ok(!JSON.stringify(lines).includes("sk-"), JSON.stringify(lines));
    const text = await meter.render();
    assert.match(text, /armature_frontend_api_keys_reloads_total\{result="success"\} 1/);
    assert.match(text, /armature_frontend_api_keys_reloads_total\{result="failure"\} 1/);
  } finally {
    stop();
  }
  assert.equal(process.listenerCount("SIGHUP"), listenersBefore);
});
