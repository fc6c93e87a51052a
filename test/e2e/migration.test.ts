import assert from "node:assert/strict";
import { test } from "node:test";
import OpenAI from "openai";
import { startEmbeddedDeployment } from "../../src/cli/embedded-deployment.js";
import { resolveServeOptions } from "../../src/cli/serve-options.js";
import { silentLogger } from "../../src/observability/index.js";

test("when its worker fails mid-stream the request moves to another worker and the client sees one stream", async () => {
  const options = resolveServeOptions(
    ["--engine", "mocker", "--workers", "2", "--router", "round-robin", "--port", "0", "--speedup-ratio", "5"],
    {},
  );
  const deployment = await startEmbeddedDeployment(options, silentLogger);
  try {
    const client = new OpenAI({ baseURL: `${deployment.frontend.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const { data: stream, response } = await client.completions
      .create({
        model: "armature-mocker",
        prompt: "hello",
        max_tokens: 40,
        stream: true,
        stream_options: { include_usage: true },
      })
      .withResponse();
    const first = response.headers.get("x-armature-worker");
    let chunks = 0;
    let finish: string | null | undefined;
    let usage: { completion_tokens: number } | undefined;
    for await (const chunk of stream) {
      if (++chunks === 3) {
        // The worker serving the stream dies: its engine stops and fails what it runs.
        await deployment.workers.find((w) => w.id === first)?.engine.close();
      }
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(finish, "length");
    assert.equal(usage?.completion_tokens, 40, "the tokens of both workers add up to max_tokens");
    const metrics = await (await fetch(`${deployment.frontend.url}/metrics`)).text();
    assert.match(metrics, /armature_frontend_model_migration_total\{model="armature-mocker"\} 1/);
  } finally {
    await deployment.close(1000);
  }
});

test("with --migration-limit 0 the failure ends the stream with an error event, never a hang", async () => {
  const options = resolveServeOptions(
    [
      "--engine",
      "mocker",
      "--workers",
      "2",
      "--router",
      "round-robin",
      "--port",
      "0",
      "--speedup-ratio",
      "5",
      "--migration-limit",
      "0",
    ],
    {},
  );
  const deployment = await startEmbeddedDeployment(options, silentLogger);
  try {
    const client = new OpenAI({ baseURL: `${deployment.frontend.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const { data: stream, response } = await client.completions
      .create({ model: "armature-mocker", prompt: "hello", max_tokens: 40, stream: true })
      .withResponse();
    const first = response.headers.get("x-armature-worker");
    let chunks = 0;
    await assert.rejects(async () => {
      for await (const _ of stream) {
        if (++chunks === 3) await deployment.workers.find((w) => w.id === first)?.engine.close();
      }
    }, OpenAI.APIError);
  } finally {
    await deployment.close(1000);
  }
});
