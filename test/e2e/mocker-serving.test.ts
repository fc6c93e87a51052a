import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { promisify } from "node:util";
import OpenAI from "openai";
import { startEmbeddedDeployment } from "../../src/cli/embedded-deployment.js";
import { resolveServeOptions } from "../../src/cli/serve-options.js";
import { silentLogger } from "../../src/observability/index.js";
import { startServe } from "../helpers/armature-process.js";
import { sseData } from "../helpers/openai-spec.js";
import { havePromtool, promtoolCheck } from "../helpers/promtool.js";

const run = promisify(execFile);
const MODEL = "armature-mocker";

async function instanceIds(url: string): Promise<string[]> {
  const health = (await (await fetch(`${url}/health`)).json()) as { instances: { id: string }[] };
  return health.instances.map((i) => i.id).sort();
}

test("requests spread round-robin over workers and a pinned request goes where it is pinned", async () => {
  const server = await startServe(["--engine", "mocker", "--workers", "2", "--router", "round-robin", "--speedup-ratio", "100"]);
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const ids = await instanceIds(server.url);
    assert.equal(ids.length, 2);
    const served: string[] = [];
    for (let i = 0; i < 4; i++) {
      const { response } = await client.chat.completions
        .create({ model: MODEL, messages: [{ role: "user", content: `q${i}` }], max_tokens: 3 })
        .withResponse();
      served.push(response.headers.get("x-armature-worker") ?? "");
    }
    assert.deepEqual(served, [ids[0], ids[1], ids[0], ids[1]]);
    for (const pinned of [ids[1], ids[1], ids[0]]) {
      const res = await fetch(`${server.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          model: MODEL,
          messages: [{ role: "user", content: "hi" }],
          max_tokens: 2,
          nvext: { backend_instance_id: pinned },
        }),
      });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get("x-armature-worker"), pinned);
      await res.json();
    }
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test("/metrics passes promtool and carries the request, latency and worker metrics", async (t) => {
  if (!havePromtool()) {
    // npm test's pretest installs it where it can; CI must never pass by skipping the check.
    assert.ok(!process.env.CI, "CI has no promtool: the pretest step should have installed prometheus");
    t.skip("promtool is not installed (apt-get install prometheus)");
    return;
  }
  const server = await startServe(["--engine", "mocker", "--speedup-ratio", "100"]);
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    await client.chat.completions.create({ model: MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 5 });
    const stream = await client.completions.create({ model: MODEL, prompt: "x", max_tokens: 5, stream: true });
    for await (const _ of stream) {
      /* drain */
    }
    // Made-up model names must not become label values (a loop of them grew the registry forever).
    for (let i = 0; i < 20; i++) {
      await client.chat.completions.create({ model: `nope-${i}`, messages: [{ role: "user", content: "hi" }] }).catch(() => {});
    }
    await new Promise((r) => setTimeout(r, 1100)); // one load report from the worker
    const text = await (await fetch(`${server.url}/metrics`)).text();
    const checked = await promtoolCheck(text);
    assert.ok(checked.ok, checked.output);
    for (const name of [
      'armature_frontend_requests_total{model="armature-mocker",endpoint="chat_completions",request_type="unary",status="success"',
      'armature_frontend_requests_total{model="unknown",endpoint="chat_completions",request_type="unary",status="error",error_type="not_found"} 20',
      "armature_frontend_inflight_requests",
      "armature_frontend_time_to_first_token_seconds_bucket",
      "armature_frontend_inter_token_latency_seconds_bucket",
      "armature_frontend_request_duration_seconds_bucket",
      "armature_frontend_input_sequence_tokens_bucket",
      'armature_frontend_output_tokens_total{model="armature-mocker"} 10',
      "armature_frontend_worker_active_decode_blocks{worker_id=",
    ]) {
      assert.ok(text.includes(name), `missing ${name}`);
    }
    assert.equal(text.includes('model="nope'), false, "no client-chosen name labels a metric");
  } finally {
    assert.equal(await server.stop(), 0);
  }
});

test("SIGTERM lets an in-flight stream finish, then the process exits 0", async () => {
  const server = await startServe(["--engine", "mocker", "--speedup-ratio", "20"]);
  const res = await fetch(`${server.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, prompt: "hello", max_tokens: 40, stream: true }),
  });
  const reader = res.body?.getReader();
  assert.ok(reader);
  await reader.read();
  const exit = server.stop("SIGTERM");
  let text = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    text += Buffer.from(value).toString();
  }
  const events = sseData(text);
  assert.equal(events.at(-1), "[DONE]");
  assert.equal(JSON.parse(events.at(-2) ?? "{}").choices[0].finish_reason, "length");
  assert.equal(await exit, 0);
  assert.match(server.output(), /armature stopped/);
});

test("a client that disconnects mid-stream stops the generation on the worker", async () => {
  const options = resolveServeOptions(["--engine", "mocker", "--port", "0", "--speedup-ratio", "5"], {});
  const deployment = await startEmbeddedDeployment(options, silentLogger);
  try {
    const controller = new AbortController();
    const res = await fetch(`${deployment.frontend.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, prompt: "hello", max_tokens: 5000, stream: true }),
      signal: controller.signal,
    });
    const reader = res.body?.getReader();
    await reader?.read();
    await reader?.read();
    const engine = deployment.workers[0]?.engine;
    assert.equal(engine?.load().activeRequests, 1);
    controller.abort();
    const deadline = Date.now() + 5000;
    while (engine?.load().activeRequests !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(engine?.load().activeRequests, 0);
    assert.equal(engine?.load().activeKvBlocks, 0);
    const metrics = await (await fetch(`${deployment.frontend.url}/metrics`)).text();
    assert.match(metrics, /armature_frontend_disconnected_clients 1/);
  } finally {
    await deployment.close(1000);
  }
});

test("armature model tiny --out writes a GGUF", async () => {
  const out = `${process.env.TMPDIR ?? "/tmp"}/armature-tiny-${process.pid}.gguf`;
  const { stdout } = await run(process.execPath, ["bin/armature.js", "model", "tiny", "--out", out]);
  assert.equal(stdout.trim(), out);
  assert.ok(existsSync(out));
});

test("with every worker busy and no room to wait, a request gets 503 and the server keeps serving", async () => {
  const server = await startServe(["--engine", "mocker", "--busy-decode-blocks", "0", "--router-queue-size", "0"]);
  try {
    const slow = fetch(`${server.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: MODEL, prompt: "hello", max_tokens: 60 }),
    });
    await new Promise((r) => setTimeout(r, 50));
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    await assert.rejects(
      client.completions.create({ model: MODEL, prompt: "again", max_tokens: 1 }),
      (e: unknown) => e instanceof OpenAI.InternalServerError && e.status === 503 && e.code === "overloaded",
    );
    assert.equal((await slow).status, 200);
    const after = await client.completions.create({ model: MODEL, prompt: "now", max_tokens: 1 });
    assert.equal(after.choices.length, 1);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(metrics, /armature_frontend_requests_total\{[^}]*status="error",error_type="overload"\} 1/);
  } finally {
    assert.equal(await server.stop(), 0);
  }
});
