import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { buildTinyModel, ensureTinyModel } from "../../src/engines/index.js";
import { startServe } from "../helpers/armature-process.js";
import { until } from "../helpers/poll.js";

// `armature serve --planner load` with two llama.cpp models: each model has its own planner, which
// sizes its pool on its own traffic. Every request breaks a 1 ms TTFT target, so the model that gets
// traffic grows to --max-workers while the one that gets none stays at --min-workers.
interface PoolState {
  model: string;
  pools: Record<string, { desired: number; ready: number }>;
}

test("each model's planner sizes its own pool: the busy model grows, the idle one stays", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-multi-planner-"));
  const other = join(dir, "other.gguf");
  await writeFile(other, buildTinyModel({ seed: 99, layers: 1 }));
  const server = await startServe([
    "--model",
    `${await ensureTinyModel()}=busy`,
    "--model",
    `${other}=idle`,
    "--context-size",
    "256",
    "--planner",
    "load",
    "--slo-ttft",
    "1",
    "--slo-itl",
    "1000",
    "--max-workers",
    "2",
    "--planner-load-interval",
    "1",
    "--planner-interval",
    "60",
    "--planner-cooldown",
    "1",
  ]);
  try {
    const state = async (): Promise<Record<string, PoolState>> =>
      ((await (await fetch(`${server.url}/v1/planner`)).json()) as { models: Record<string, PoolState> }).models;
    const first = await state();
    assert.deepEqual(Object.keys(first).sort(), ["busy", "idle"]);
    assert.equal(first.busy?.model, "busy");
    const traffic = (async () => {
      // Requests to one model only, until its pool has grown.
      while ((await state()).busy?.pools.aggregated?.ready !== 2) {
        const response = await fetch(`${server.url}/v1/completions`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ model: "busy", prompt: "The harbour", max_tokens: 4 }),
        });
        assert.equal(response.status, 200, await response.text());
      }
    })();
    const grown = await until("the busy model's pool grows to 2", state, (s) => s.busy?.pools.aggregated?.ready === 2);
    await traffic;
    assert.equal(grown.idle?.pools.aggregated?.desired, 1, "the idle model's planner added nothing");
    const health = (await (await fetch(`${server.url}/health`)).json()) as {
      instances: { model?: string; card?: { name: string } }[];
    };
    const workers = (name: string) => health.instances.filter((i) => (i.card?.name ?? i.model) === name).length;
    assert.deepEqual([workers("busy"), workers("idle")], [2, 1], JSON.stringify(health.instances));
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    assert.match(metrics, /armature_planner_desired_workers\{pool="aggregated",model="busy"\} 2/);
    assert.match(metrics, /armature_planner_desired_workers\{pool="aggregated",model="idle"\} 1/);
    // The idle model still answers, on its one worker.
    const answer = await fetch(`${server.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "idle", prompt: "The harbour", max_tokens: 2 }),
    });
    assert.equal(answer.status, 200);
    // The dashboard's view names each model's pool.
    const fleet = (await (await fetch(`${server.url}/v1/fleet`)).json()) as { planner: { pools: Record<string, unknown> } };
    assert.deepEqual(Object.keys(fleet.planner.pools).sort(), ["busy · aggregated", "idle · aggregated"]);
  } finally {
    assert.equal(await server.stop("SIGTERM"), 0, server.output());
  }
});
