import assert from "node:assert/strict";
import { test } from "node:test";
import { startServe } from "../helpers/armature-process.js";
import { until } from "../helpers/poll.js";

// `armature serve --planner load` on the mocker: a load the SLA cannot hold adds workers in the
// same process; when requests stop finishing, it drains them back to --min-workers, and a request
// still streaming on a drained worker completes.
interface PlannerState {
  pools: Record<string, { desired: number; ready: number }>;
  decisions: Array<{ action: string; applied: boolean; from: number; to: number; reason: string }>;
}

async function complete(url: string, maxTokens: number): Promise<number> {
  const response = await fetch(`${url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "armature-mocker", prompt: "hello", max_tokens: maxTokens, ignore_eos: true }),
  });
  assert.equal(response.status, 200, await response.clone().text());
  const body = (await response.json()) as { usage: { completion_tokens: number } };
  return body.usage.completion_tokens;
}

test("the load planner adds workers under a load its SLA cannot hold and drains them when it stops", async () => {
  // Every request breaks a 1 ms TTFT target: the load loop adds a worker per second up to 3.
  const server = await startServe([
    "--engine",
    "mocker",
    "--speedup-ratio",
    "10",
    "--planner",
    "load",
    "--slo-ttft",
    "1",
    "--slo-itl",
    "1000",
    "--max-workers",
    "3",
    "--planner-load-interval",
    "1",
    "--planner-interval",
    "60",
    "--planner-cooldown",
    "1",
  ]);
  try {
    await scaleUpAndDown(server.url);
  } catch (error) {
    // What the server printed, and whether it is still running, say why when it went away.
    const exit = server.child.exitCode ?? server.child.signalCode ?? "still running";
    throw new Error(`${(error as Error).message}\n--- armature serve (${exit}) printed:\n${server.output()}`, { cause: error });
  } finally {
    assert.equal(await server.stop("SIGTERM"), 0, server.output());
  }
});

/** Loads the server until the planner grows it to 3 workers, then lets it drain back to 1. */
async function scaleUpAndDown(url: string): Promise<void> {
  const state = async () => (await (await fetch(`${url}/v1/planner`)).json()) as PlannerState;
  let busy = true;
  // The load loop's failure is rethrown here, never left as an unhandled rejection that would
  // hide what the server printed.
  let loadFailure: unknown;
  const load = (async () => {
    while (busy) await Promise.all([complete(url, 4), complete(url, 4)]);
  })().catch((error: unknown) => {
    loadFailure = error;
  });
  const grownOrFailed = async () => {
    if (loadFailure) throw loadFailure;
    return state();
  };
  const grown = await until("the pool grows to 3", grownOrFailed, (s) => s.pools.aggregated?.desired === 3);
  assert.ok(grown.decisions.some((d) => d.action === "up" && d.applied));
  // Desired first, then ready: the third worker registers once it has started.
  await until(
    "three workers serve",
    async () => (await (await fetch(`${url}/health`)).json()) as { instances: unknown[] },
    (health) => health.instances.length === 3,
    10_000,
  );
  busy = false;
  await load;
  if (loadFailure) throw loadFailure;
  // A long request keeps streaming while no request finishes: the planner reads the deployment
  // as idle and drains workers, this one's included if it is picked; it must still complete.
  const long = complete(url, 3000);
  long.catch(() => undefined); // awaited below; a drain that times out first must not leave it unhandled
  await until("the pool drains to 1", state, (s) => s.pools.aggregated?.desired === 1, 30_000);
  assert.equal(await long, 3000);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.match(metrics, /armature_planner_desired_workers\{pool="aggregated",model="armature-mocker"\} 1/);
  assert.match(
    metrics,
    /armature_planner_decisions_total\{pool="aggregated",loop="load",action="down",applied="true",model="armature-mocker"\} 2/,
  );
}

test("without a planner GET /v1/planner is 404; planner flags without --planner and sla without a profile are refused", async () => {
  const server = await startServe(["--engine", "mocker"]);
  try {
    const response = await fetch(`${server.url}/v1/planner`);
    assert.equal(response.status, 404);
    assert.match(((await response.json()) as { error: { message: string } }).error.message, /--planner load or --planner sla/);
  } finally {
    assert.equal(await server.stop("SIGTERM"), 0);
  }
  const { resolveServeOptions } = await import("../../src/cli/serve-options.js");
  assert.throws(() => resolveServeOptions(["--slo-ttft", "200"], {}), /--planner .*add --planner load or --planner sla/);
  const { compilePlannerOptions } = await import("../../src/planner/index.js");
  const options = resolveServeOptions(["--planner", "sla"], {});
  assert.throws(() => compilePlannerOptions(options.planner), /--profile is required with --planner sla/);
  assert.throws(
    () => resolveServeOptions(["--planner", "sla", "--profile", "/nonexistent.json"], {}),
    /--profile \/nonexistent.json cannot be read/,
  );
});

test("the load planner grows the pool while its first requests are still waiting, before any has finished", async () => {
  // 64 streams of 4,000-character prompts for 5,000 tokens each: none ends within the test. The
  // requests waiting for their first token count with their age, so the pool grows anyway.
  const server = await startServe([
    "--engine",
    "mocker",
    "--planner",
    "load",
    "--slo-ttft",
    "50",
    "--slo-itl",
    "1000",
    "--max-workers",
    "2",
    "--planner-load-interval",
    "1",
    "--planner-interval",
    "60",
  ]);
  const stop = new AbortController();
  let ended = 0;
  const streams = Array.from({ length: 64 }, async (_, i) => {
    const response = await fetch(`${server.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        model: "armature-mocker",
        prompt: `${i} ${"lorem ipsum dolor sit amet ".repeat(150)}`.slice(0, 4000),
        max_tokens: 5000,
        ignore_eos: true,
        stream: true,
      }),
      signal: stop.signal,
    });
    for await (const _ of response.body ?? []);
    ended++;
  });
  try {
    const state = async () => (await (await fetch(`${server.url}/v1/planner`)).json()) as PlannerState;
    const grown = await until("the pool grows to 2", state, (s) => s.pools.aggregated?.desired === 2);
    assert.equal(ended, 0, "a stream ended before the pool grew");
    assert.match(grown.decisions.find((d) => d.action === "up")?.reason ?? "", /TTFT over 50 ms on all 1 workers/);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n--- armature serve printed:\n${server.output()}`, { cause: error });
  } finally {
    stop.abort();
    await Promise.allSettled(streams);
    assert.equal(await server.stop("SIGTERM"), 0, server.output());
  }
});

test("--min-workers 0: an idle fleet scales to zero and keeps its model listed; the next requests wake a worker and none fails", async () => {
  const server = await startServe([
    "--engine",
    "mocker",
    "--planner",
    "load",
    "--min-workers",
    "0",
    "--scale-to-zero-after",
    "1",
    "--planner-load-interval",
    "0.5",
    "--planner-cooldown",
    "0",
  ]);
  try {
    const url = server.url;
    const state = async () => (await (await fetch(`${url}/v1/planner`)).json()) as PlannerState;
    const instances = async () => ((await (await fetch(`${url}/health`)).json()) as { instances: unknown[] }).instances.length;
    assert.equal(await complete(url, 4), 4);
    // Idle for a second: the last worker drains and leaves discovery.
    await until("the pool scales to zero", state, (s) => s.pools.aggregated?.desired === 0);
    await until("no worker serves", instances, (n) => n === 0);
    // Healthy by design: a load balancer must not take the frontend out for it.
    const health = (await (await fetch(`${url}/health`)).json()) as { status: string; message: string };
    assert.deepEqual(health.status, "healthy");
    assert.match(health.message, /Scaled to zero/);
    const down = (await state()).decisions.find((d) => d.to === 0);
    assert.match(down?.reason ?? "", /idle for [\d.]+ s \(--scale-to-zero-after 1 s\)/);
    // The model stays listed: clients see it, and its requests are held, not refused.
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
    assert.deepEqual(
      models.data.map((m) => m.id),
      ["armature-mocker"],
    );
    // Three requests at once into a fleet of none: the first arrival wakes a worker, all three complete.
    assert.deepEqual(await Promise.all([complete(url, 4), complete(url, 5), complete(url, 6)]), [4, 5, 6]);
    const woken = (await state()).decisions.find((d) => d.from === 0 && d.to === 1);
    assert.equal(woken?.reason, "a request arrived at a pool scaled to zero");
    assert.equal(woken?.applied, true);
    assert.equal(await instances(), 1);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    assert.doesNotMatch(metrics, /frontend_requests_total\{[^}]*status="error"/);
    assert.match(metrics, /frontend_requests_total\{[^}]*status="success"[^}]*\} 4/);
  } catch (error) {
    throw new Error(`${(error as Error).message}\n--- armature serve printed:\n${server.output()}`, { cause: error });
  } finally {
    assert.equal(await server.stop("SIGTERM"), 0, server.output());
  }
});
