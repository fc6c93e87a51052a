import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { connect } from "@nats-io/transport-node";
import { Etcd3 } from "etcd3";
import OpenAI from "openai";
import { isRunning } from "../../src/planner/connectors/adopted-worker.js";
import { PLANNER_CLAIM } from "../../src/planner/index.js";
import { EtcdDiscovery } from "../../src/runtime/etcd/index.js";
import { encodeMessage } from "../../src/runtime/index.js";
import { startArmature } from "../helpers/armature-process.js";
import { type ClusterServers, startClusterServers } from "../helpers/cluster-servers.js";
import { FakeKubernetesApi } from "../helpers/fake-kubernetes-api.js";

// armature planner as its own process over a real nats-server and etcd: it reads the frontend's
// traffic reports and starts and drains mocker worker processes through the local connector.
let servers: ClusterServers;
before(async () => {
  servers = await startClusterServers();
});
after(() => servers.stop());

interface PlannerView {
  readonly pools: Record<string, { desired: number; ready: number }>;
  readonly acting?: boolean;
  readonly holder?: string;
  readonly workers: { name: string; state: string }[];
  readonly decisions: { action: string; to: number }[];
}

/** A planner's `GET /v1/planner`. */
async function plannerView(url: string): Promise<PlannerView> {
  return (await (await fetch(`${url}/v1/planner`)).json()) as PlannerView;
}

/** Reads until `ok` holds, every 100 ms; past `timeoutMs` fails with the last reading and the processes' output. */
async function waitFor<T>(
  what: string,
  read: () => Promise<T>,
  ok: (value: T) => boolean,
  output: () => string,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (ok(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`${what} did not happen in time: ${JSON.stringify(value)}\n${output().slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Outcome {
  readonly tokens: number;
  readonly finish: string | null | undefined;
  readonly error?: string;
  endedAt: number;
}

async function stream(client: OpenAI, prompt: string, maxTokens: number): Promise<Outcome> {
  let tokens = 0;
  let finish: string | null | undefined;
  try {
    const data = await client.completions.create({
      model: "armature-mocker",
      prompt,
      max_tokens: maxTokens,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of data) {
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) tokens = chunk.usage.completion_tokens;
    }
    return { tokens, finish, endedAt: Date.now() };
  } catch (error) {
    return { tokens, finish, error: String(error), endedAt: Date.now() };
  }
}

test("armature planner scales mocker workers 1 → 3 under load and drains back to 1 without failing a request; SIGINT drains the rest", async () => {
  const planner = await startArmature([
    "planner",
    ...servers.flags,
    "--planner",
    "load",
    "--connector",
    "local",
    // Any real request misses a 1 ms TTFT target: load makes the pool grow.
    "--slo-ttft",
    "1",
    "--min-workers",
    "1",
    "--max-workers",
    "3",
    "--planner-load-interval",
    "1",
    "--planner-cooldown",
    "1",
    "--",
    "--engine",
    "mocker",
    "--speedup-ratio",
    "0.5",
    // startArmature appends --log-level warn, which lands in this worker flag group.
  ]);
  let frontend: Awaited<ReturnType<typeof startArmature>> | undefined;
  const stop = { done: false };
  let load: Promise<Outcome[]>[] = [];
  const nc = await connect({ servers: servers.nats.url });
  try {
    const view = () => plannerView(planner.url);
    const until = (what: string, predicate: (v: PlannerView) => boolean, timeoutMs = 20_000) =>
      waitFor(what, view, predicate, planner.output, timeoutMs);
    const pool = (v: PlannerView) => v.pools.aggregated ?? { desired: -1, ready: -1 };
    await until("the first worker's start", (v) => pool(v).ready === 1);

    // A report no honest frontend sends: dropped and counted, and the planner goes on.
    nc.publish(
      "armature.traffic.intruder",
      encodeMessage({ type: "traffic-report", frontendId: "intruder", requests: -1, inputTokens: 0 }),
    );
    await nc.flush();

    frontend = await startArmature(["frontend", ...servers.flags, "--port", "0", "--router", "round-robin"]);
    const client = new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: "unused", maxRetries: 0 });
    load = [0, 1, 2, 3].map(async (n) => {
      const outcomes: Outcome[] = [];
      for (let i = 0; !stop.done; i++) outcomes.push(await stream(client, `client ${n} request ${i}`, 20));
      return outcomes;
    });
    await until("scaling up to 3 ready workers", (v) => pool(v).desired === 3 && pool(v).ready === 3, 25_000);
    stop.done = true;
    const short = (await Promise.all(load)).flat();

    // Round-robin puts one long stream on each worker; the load loop, seeing no finished request
    // for six load intervals, shrinks the pool while they stream.
    const longStreams = [0, 1, 2].map((n) => stream(client, `long ${n}`, 1200));
    const settled: Outcome[] = [];
    for (const s of longStreams) void s.then((o) => settled.push(o));
    const down = await until("draining back to 1", (v) => pool(v).desired === 1, 25_000);
    assert.ok(settled.length < 3, "the pool shrank while long streams were still running");
    assert.ok(
      down.workers.some((w) => w.state === "draining"),
      `a removed worker drains its stream: ${JSON.stringify(down.workers)}`,
    );
    const long = await Promise.all(longStreams);

    const failed = [...short, ...long].filter((o) => o.error !== undefined || o.finish !== "length");
    assert.deepEqual(failed, [], "every request streamed to its length");
    assert.deepEqual(
      long.map((o) => o.tokens),
      [1200, 1200, 1200],
    );
    assert.ok(short.length > 10, `${short.length} short requests`);
    const frontendMetrics = await (await fetch(`${frontend.url}/metrics`)).text();
    assert.doesNotMatch(frontendMetrics, /^armature_frontend_model_migration_total\{[^}]*\} [1-9]/m, "no request was moved");

    const metrics = await (await fetch(`${planner.url}/metrics`)).text();
    const reports = Number(/^armature_planner_traffic_reports_total (\d+)/m.exec(metrics)?.[1] ?? 0);
    assert.ok(reports >= 3, `traffic reports arrived:\n${metrics}`);
    const requests = Number(/^armature_planner_traffic_requests_total (\d+)/m.exec(metrics)?.[1] ?? 0);
    assert.ok(requests >= short.length, `the reports sum the short requests (${requests} of ${short.length})`);
    assert.match(metrics, /^armature_plane_messages_dropped\{kind="traffic-report"\} 1$/m);
    const ups =
      /^armature_planner_decisions_total\{pool="aggregated",loop="load",action="up",applied="true",model=""\} (\d+)$/m.exec(
        metrics,
      );
    assert.ok(Number(ups?.[1]) >= 2, `two scale-ups at least:\n${metrics}`);

    await frontend.stop("SIGINT");
    frontend = undefined;
    const before = planner.output().length;
    assert.equal(await planner.stop("SIGINT"), 0, planner.output().slice(-4000));
    const stopped = planner.output().slice(before);
    assert.match(stopped, /armature planner stopped/);
    // Every worker that got ready drained and exited 0. Finished long streams may have grown the
    // pool again; a worker still starting at SIGINT had nothing to drain and dies of the signal.
    const exits = planner.output().match(/armature planner: worker \S+ \(pid \d+\) .*/g) ?? [];
    assert.ok(exits.length >= 3, planner.output().slice(-4000));
    for (const line of exits) {
      const name = /worker (\S+)/.exec(line)?.[1] as string;
      const wasReady = new RegExp(`^\\[${name}\\] armature worker \\S+ serving`, "m").test(planner.output());
      assert.match(line, wasReady ? /drained: exit 0$/ : /(drained: exit 0|stopped: signal SIGTERM)$/);
    }
    assert.doesNotMatch(planner.output(), /killed after|exited by itself|Error|UNAVAILABLE/);
  } finally {
    stop.done = true;
    await Promise.all(load);
    await nc.close();
    await frontend?.stop();
    await planner.stop();
  }
});

test("armature planner --connector kubernetes raises a Deployment to --min-workers through its scale subresource and leaves it on SIGINT", async () => {
  // FakeKubernetesApi: a loopback server written from the Kubernetes API reference.
  const api = await FakeKubernetesApi.start({
    token: "planner-token",
    deployments: [{ namespace: "serving", name: "llama", replicas: 1 }],
    podStartMs: 100,
  });
  const dir = await mkdtemp(join(tmpdir(), "armature-kube-"));
  const kubeconfig = join(dir, "config");
  await writeFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [{ name: "fake", cluster: { server: api.url, "insecure-skip-tls-verify": true } }],
      users: [{ name: "planner", user: { token: "planner-token" } }],
      contexts: [{ name: "fake", context: { cluster: "fake", user: "planner" } }],
      "current-context": "fake",
    }),
  );
  let planner: Awaited<ReturnType<typeof startArmature>> | undefined;
  try {
    planner = await startArmature(
      [
        "planner",
        ...servers.flags,
        "--connector",
        "kubernetes",
        "--k8s-deployments",
        "aggregated=llama",
        "--k8s-namespace",
        "serving",
        "--min-workers",
        "2",
        "--max-workers",
        "3",
        "--planner-load-interval",
        "1",
      ],
      { KUBECONFIG: kubeconfig },
    );
    const deadline = Date.now() + 15_000;
    let pools: Record<string, { desired: number; ready: number }> = {};
    while (pools.aggregated?.ready !== 2) {
      if (Date.now() > deadline) throw new Error(`not raised to 2: ${JSON.stringify(pools)}\n${planner.output()}`);
      await new Promise((r) => setTimeout(r, 100));
      pools = ((await (await fetch(`${planner.url}/v1/planner`)).json()) as { pools: typeof pools }).pools;
    }
    const patches = api.requests.filter((r) => r.method === "PATCH");
    assert.deepEqual(
      patches.map((r) => [r.path, r.body]),
      [["/apis/apps/v1/namespaces/serving/deployments/llama/scale", { spec: { replicas: 2 } }]],
    );
    assert.equal(await planner.stop("SIGINT"), 0, planner.output());
    assert.equal(
      api.requests.filter((r) => r.method === "PATCH").length,
      1,
      "stopping the planner leaves the Deployment as it is",
    );
  } finally {
    await planner?.stop();
    await api.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test("two armature planners: one acts, the other stands by; SIGKILL the one acting and the other takes over, adopting its workers", async () => {
  const flags = [
    "planner",
    ...servers.flags,
    "--planner",
    "load",
    "--connector",
    "local",
    "--min-workers",
    "2",
    "--max-workers",
    "3",
    "--planner-load-interval",
    "1",
    "--",
    "--engine",
    "mocker",
  ];
  const etcd = new Etcd3({ hosts: servers.etcd.endpoint });
  const discovery = new EtcdDiscovery(etcd);
  const first = await startArmature(flags);
  let second: Awaited<ReturnType<typeof startArmature>> | undefined;
  try {
    const view = plannerView;
    const until = <T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 20_000) =>
      waitFor(what, read, ok, () => `${first.output().slice(-3000)}\n${second?.output().slice(-3000)}`, timeoutMs);
    await until(
      "the first planner's two workers",
      () => view(first.url),
      (v) => v.acting === true && v.pools.aggregated?.ready === 2,
    );
    const started = await workers();
    assert.equal(started.length, 2);
    assert.ok(started.every((w) => w.startedBy?.pid !== first.child.pid && w.startedBy?.host === hostname()));

    second = await startArmature(flags);
    assert.match(second.output(), /standing by: another planner acts/);
    const standby = await view(second.url);
    assert.equal(standby.acting, false);
    assert.equal(standby.holder, (await view(first.url)).holder);
    // Standing by for three load-loop periods, it starts nothing.
    await new Promise((r) => setTimeout(r, 3000));
    assert.deepEqual((await view(second.url)).workers, []);
    assert.equal((await workers()).length, 2);

    // The acting planner dies without a word; its workers keep serving, and the claim lapses.
    first.child.kill("SIGKILL");
    const took = await until(
      "the second planner takes over",
      () => view(second!.url),
      (v) => v.acting === true,
      15_000,
    );
    assert.deepEqual(
      took.workers.map((w) => w.state),
      ["ready", "ready"],
    );
    assert.match(second.output(), /adopted 2 workers a previous planner started/);
    // Its next load-loop tick reads the adopted pool: two desired, two ready.
    await until(
      "the adopted pool in the planner's view",
      () => view(second!.url),
      (v) => v.pools.aggregated?.desired === 2 && v.pools.aggregated.ready === 2,
      5000,
    );
    // It adopted them rather than starting its own: the same two processes serve.
    await new Promise((r) => setTimeout(r, 2000));
    assert.deepEqual((await workers()).map((w) => w.id).sort(), started.map((w) => w.id).sort());

    // Stopped, it drains the adopted workers too (SIGTERM by pid), and gives the claim up.
    assert.equal(await second.stop("SIGINT"), 0, second.output().slice(-3000));
    second = undefined;
    await until("the adopted workers leave discovery", workers, (w) => w.length === 0, 15_000);
    for (const worker of started) assert.equal(isRunning(worker.startedBy?.pid as number), false);
    assert.equal(await discovery.holder(PLANNER_CLAIM), undefined);
  } finally {
    await second?.stop();
    await first.stop().catch(() => undefined);
    // Anything left of the first planner's workers goes too.
    for (const worker of await workers().catch(() => [])) {
      try {
        process.kill(worker.startedBy?.pid as number, "SIGKILL");
      } catch {}
    }
    await discovery.close();
    etcd.close();
  }
  async function workers() {
    return (await discovery.list()).filter((i) => i.startedBy !== undefined);
  }
});

test("armature planner scales a disaggregated deployment end to end: prefill and decode pools of local workers, split requests, the prefill pool grown under load", async () => {
  const planner = await startArmature([
    "planner",
    ...servers.flags,
    "--planner",
    "load",
    "--connector",
    "local",
    // Every real request misses a 1 ms TTFT target: the prefill pool, judged on TTFT, grows.
    "--slo-ttft",
    "1",
    "--slo-itl",
    "1000",
    "--min-workers",
    "1",
    "--max-workers",
    "3",
    "--planner-load-interval",
    "1",
    "--planner-cooldown",
    "1",
    "--",
    "--role",
    "prefill",
    "--engine",
    "mocker",
    "--",
    "--role",
    "decode",
    "--engine",
    "mocker",
  ]);
  let frontend: Awaited<ReturnType<typeof startArmature>> | undefined;
  const stop = { done: false };
  let load: Promise<Outcome[]>[] = [];
  try {
    const view = () => plannerView(planner.url);
    const until = (what: string, predicate: (v: PlannerView) => boolean, timeoutMs = 25_000) =>
      waitFor(what, view, predicate, planner.output, timeoutMs);
    await until("a prefill and a decode worker", (v) => v.pools.prefill?.ready === 1 && v.pools.decode?.ready === 1);
    frontend = await startArmature(["frontend", ...servers.flags, "--port", "0"]);
    const client = new OpenAI({ baseURL: `${frontend.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const prompt = (n: number, i: number) => `client ${n} request ${i} ${"a long prompt to prefill ".repeat(40)}`;
    load = [0, 1, 2, 3].map(async (n) => {
      const outcomes: Outcome[] = [];
      for (let i = 0; !stop.done; i++) outcomes.push(await stream(client, prompt(n, i), 16));
      return outcomes;
    });
    const grown = await until("the prefill pool grows", (v) => (v.pools.prefill?.ready ?? 0) >= 2);
    assert.ok(grown.decisions.some((d) => d.action === "up" && d.to >= 2));
    stop.done = true;
    const outcomes = (await Promise.all(load)).flat();
    assert.deepEqual(
      outcomes.filter((o) => o.error !== undefined || o.tokens !== 16),
      [],
      "every request streamed to its length",
    );
    // The requests were split: prefilled on prefill workers, decoded on the decode worker.
    const metrics = await (await fetch(`${frontend.url}/metrics`)).text();
    const remote = Number(/disagg_prefill_requests_total\{where="remote"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    assert.ok(remote >= outcomes.length / 2, `remote prefills ${remote} of ${outcomes.length}:\n${metrics.slice(0, 3000)}`);
    const workers = (await view()).workers;
    assert.ok(workers.some((w) => w.name.startsWith("prefill-")) && workers.some((w) => w.name.startsWith("decode-")));
    await frontend.stop("SIGINT");
    frontend = undefined;
    assert.equal(await planner.stop("SIGINT"), 0, planner.output().slice(-4000));
    assert.doesNotMatch(planner.output(), /killed after|exited by itself/);
  } finally {
    stop.done = true;
    await Promise.all(load);
    await frontend?.stop();
    await planner.stop();
  }
});
