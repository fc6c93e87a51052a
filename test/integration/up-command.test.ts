import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import OpenAI from "openai";
import { ensureTinyModel } from "../../src/engines/index.js";
import { freePort } from "../helpers/free-port.js";
import { llamaServerBinary } from "../helpers/llama-server.js";

/** `armature up FILE` in its own process group (the test signals the group, as a terminal's Ctrl-C does), its output collected. */
function startUp(file: string) {
  const up = spawn(process.execPath, ["bin/armature.js", "up", file], { stdio: ["ignore", "pipe", "pipe"], detached: true });
  const log = { text: "" };
  for (const stream of [up.stdout, up.stderr]) {
    stream?.on("data", (d: Buffer) => {
      log.text += d.toString();
    });
  }
  return { up, log, exited: once(up, "exit") };
}

test("armature up starts nats, etcd, workers of two models, a router and a frontend from a cluster file, and Ctrl-C stops them all in order, cleanly", async () => {
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
      "    model-name: alpha",
      "    speedup-ratio: 100",
      "    log-level: warn",
      "  - engine: mocker",
      "    model-name: beta",
      "    block-size: 32",
      "    speedup-ratio: 100",
      "    log-level: warn",
    ].join("\n"),
  );
  const { up, log, exited } = startUp(file);
  let signalled = false;
  try {
    const deadline = Date.now() + 60_000;
    // Processes start side by side: the router may be ready after the frontend (which routes with
    // its own policy meanwhile), so wait for both banners and both workers.
    const ready = (): boolean =>
      /\[frontend\] armature frontend .* at http/.test(log.text) &&
      /\[router-1\] armature router/.test(log.text) &&
      /\[worker-1\] armature worker/.test(log.text) &&
      /\[worker-2\] armature worker/.test(log.text);
    while (!ready()) {
      if (Date.now() > deadline || up.exitCode !== null) throw new Error(`cluster did not come up:\n${log.text}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${httpPort}/v1`, apiKey: "unused", maxRetries: 0 });
    // Two models, one worker group each, behind one frontend.
    const models = async () => (await client.models.list()).data.map((m) => m.id).sort();
    while ((await models()).length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(await models(), ["alpha", "beta"]);
    for (const model of ["alpha", "beta"]) {
      const result = await client.completions.create({ model, prompt: "hi", max_tokens: 3 });
      assert.deepEqual([result.model, result.choices.length], [model, 1]);
    }

    // Regression: Ctrl-C reached every child at once; etcd went while the workers deregistered,
    // and each worker printed "14 UNAVAILABLE: No connection established … ECONNREFUSED".
    const before = log.text.length;
    process.kill(-(up.pid as number), "SIGINT");
    signalled = true;
    const [code] = await exited;
    const after = log.text.slice(before);
    assert.equal(code, 0, log.text);
    // armature's own processes must stay quiet; etcd's log of its own shutdown (its gateway redialling
    // itself as it closes) is etcd's, whatever armature does.
    for (const line of after.split("\n").filter((l) => !l.startsWith("[etcd]"))) {
      assert.doesNotMatch(line, /UNAVAILABLE|ECONNREFUSED|Error|second signal/, `a clean Ctrl-C printed:\n${after}`);
    }
    // Stopped in order: the frontend, then the workers, then the router, then the servers.
    const stoppedAt = (line: RegExp): number => after.search(line);
    const frontend = stoppedAt(/\[frontend\] armature frontend stopped/);
    const workers = Math.max(
      stoppedAt(/\[worker-1\] armature worker stopped/),
      stoppedAt(/\[worker-2\] armature worker stopped/),
    );
    const router = stoppedAt(/\[router-1\] armature router stopped/);
    const nats = stoppedAt(/\[nats\] .*Server Exiting/);
    assert.ok(frontend >= 0 && frontend < workers && workers < router && router < nats, `stop order:\n${after}`);
    // Every child ended cleanly: status 0 (etcd by re-raising the SIGTERM it handled, as etcd does).
    const summary = /armature up: stopped \((.*)\)/.exec(after)?.[1];
    assert.equal(summary, "nats 0, etcd SIGTERM, worker-1 0, worker-2 0, router-1 0, frontend 0", after);
  } finally {
    if (!signalled) up.kill("SIGINT");
    await exited;
  }
});

test("armature up with a planner: section: the planner starts the workers, and Ctrl-C stops the frontend, then the planner (draining its workers), then the servers", async () => {
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
      "  log-level: warn",
      "planner:",
      "  min-workers: 1",
      "  max-workers: 2",
      "  log-level: warn",
      "  worker: { engine: mocker, speedup-ratio: 100, log-level: warn }",
    ].join("\n"),
  );
  const { up, log, exited } = startUp(file);
  let signalled = false;
  try {
    const deadline = Date.now() + 60_000;
    const ready = (): boolean =>
      /\[frontend\] armature frontend .* at http/.test(log.text) &&
      /\[planner\] armature planner \(load, aggregated, local connector\) at http/.test(log.text) &&
      /\[planner\] \[aggregated-1\] armature worker \S+ serving/.test(log.text);
    while (!ready()) {
      if (Date.now() > deadline || up.exitCode !== null) throw new Error(`cluster did not come up:\n${log.text}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${httpPort}/v1`, apiKey: "unused", maxRetries: 0 });
    const result = await client.completions.create({ model: "armature-mocker", prompt: "hi", max_tokens: 3 });
    assert.equal(result.choices.length, 1);

    const before = log.text.length;
    process.kill(-(up.pid as number), "SIGINT");
    signalled = true;
    const [code] = await exited;
    const after = log.text.slice(before);
    assert.equal(code, 0, log.text);
    // armature's own processes' lines: etcd logs its gateway redialling itself as it shuts down.
    for (const line of after.split("\n").filter((l) => !l.startsWith("[etcd]"))) {
      assert.doesNotMatch(
        line,
        /UNAVAILABLE|ECONNREFUSED|Error|second signal|killed|by itself/,
        `a clean Ctrl-C printed:\n${after}`,
      );
    }
    const stoppedAt = (line: RegExp): number => after.search(line);
    const frontend = stoppedAt(/\[frontend\] armature frontend stopped/);
    const worker = stoppedAt(/\[planner\] armature planner: worker aggregated-1 \(pid \d+\) drained: exit 0/);
    const planner = stoppedAt(/\[planner\] armature planner stopped/);
    const nats = stoppedAt(/\[nats\] .*Server Exiting/);
    assert.ok(frontend >= 0 && frontend < worker && worker < planner && planner < nats, `stop order:\n${after}`);
    const summary = /armature up: stopped \((.*)\)/.exec(after)?.[1];
    assert.equal(summary, "nats 0, etcd SIGTERM, planner 0, frontend 0", after);
  } finally {
    if (!signalled) up.kill("SIGINT");
    await exited;
  }
});

test("armature up starts a worker's engine server from its engine-command, and stops it after the worker", async () => {
  const [natsPort, etcdPort, etcdPeer, httpPort, enginePort] = [
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
    await freePort(),
  ];
  const dir = await mkdtemp(join(tmpdir(), "armature-up-"));
  const model = await ensureTinyModel(dir);
  const file = join(dir, "cluster.yaml");
  await writeFile(
    file,
    [
      `nats: { port: ${natsPort} }`,
      `etcd: { port: ${etcdPort}, peerPort: ${etcdPeer} }`,
      "frontend:",
      `  port: ${httpPort}`,
      "  log-level: warn",
      "workers:",
      "  - engine: llama-server",
      `    engine-url: http://127.0.0.1:${enginePort}`,
      `    model: ${model}`,
      "    log-level: warn",
      `    engine-command: ${llamaServerBinary()} --model ${model} --host 127.0.0.1 --port ${enginePort} --parallel 2`,
    ].join("\n"),
  );
  const { up, log, exited } = startUp(file);
  let signalled = false;
  try {
    const deadline = Date.now() + 90_000;
    const ready = (): boolean =>
      /\[frontend\] armature frontend .* at http/.test(log.text) &&
      /\[worker-1\] armature worker .*\(llama-server\)/.test(log.text);
    while (!ready()) {
      if (Date.now() > deadline || up.exitCode !== null) throw new Error(`cluster did not come up:\n${log.text}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.match(log.text, /armature up: 1 worker process \(and 1 engine server\)/);
    const client = new OpenAI({ baseURL: `http://127.0.0.1:${httpPort}/v1`, apiKey: "unused", maxRetries: 0 });
    const result = await client.chat.completions.create({
      model: "armature-tiny-v2",
      messages: [{ role: "user", content: "Hello" }],
      max_tokens: 4,
      temperature: 0,
    });
    assert.equal(result.usage?.completion_tokens !== undefined && result.usage.completion_tokens > 0, true);

    const before = log.text.length;
    process.kill(-(up.pid as number), "SIGINT");
    signalled = true;
    const [code] = await exited;
    const after = log.text.slice(before);
    assert.equal(code, 0, log.text);
    // The worker drains and stops before its engine server is asked to stop.
    const worker = after.search(/\[worker-1\] armature worker stopped/);
    const engine = after.search(/\[engine-1\] .*cleaning up before exit/);
    assert.ok(worker >= 0 && worker < engine, `stop order:\n${after}`);
    const summary = /armature up: stopped \((.*)\)/.exec(after)?.[1];
    assert.equal(summary, "nats 0, etcd SIGTERM, engine-1 0, worker-1 0, frontend 0", after);
  } finally {
    if (!signalled) up.kill("SIGINT");
    await exited;
  }
});
