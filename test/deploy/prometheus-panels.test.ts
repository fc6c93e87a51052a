import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import OpenAI from "openai";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { havePrometheus, type PrometheusServer, startPrometheus } from "../helpers/prometheus-server.js";

// Every query of every Grafana board in deploy/grafana, asked of a real Prometheus (Debian's) that
// scrapes two running deployments: `armature serve` on the mocker with a prefill worker, the sla
// planner and API keys, and on the generated tiny llama.cpp model with host and disk KV tiers.

const BOARDS_DIR = fileURLToPath(new URL("../../deploy/grafana/", import.meta.url));
const KEY = "sk-prometheus-panels-test";
const MOCKER = "armature-mocker";
/** The sla planner predicts load (the planner_predicted_load panels) and sizes pools from a profile. */
const PROFILE = fileURLToPath(new URL("../../src/planner/fixtures/tiny-profile.json", import.meta.url));
const TINY = "armature-tiny";

/**
 * Queries that cannot return data from a healthy deployment, by metric, and why: each counts a
 * failure, and prom-client shows a labelled counter only once it counted one. The test checks
 * that these, and only these, come back empty, so the list stays true.
 */
const NO_DATA_WITHOUT_FAILURES: Readonly<Record<string, string>> = {
  armature_frontend_model_migration_total: "a worker must fail mid-stream; serve's workers do not fail on request",
  armature_disagg_local_prefill_fallbacks_total: "a prefill or a KV transfer must fail",
  armature_kvbm_checksum_failures_total: "a stored block must fail its checksum",
  armature_kvbm_read_failures_total: "a stored block must fail to read",
  armature_kvbm_write_failures_total: "a tier write must fail",
  armature_kvbm_offload_skipped_blocks_total: "a tier's write queue must be full",
  armature_plane_messages_dropped: "a malformed message must come over a plane",
};

/** Two scrapes: a series must exist before it grows, or rate() sees no increase (a quantile of none is NaN). */
const twoScrapes = (): Promise<void> => new Promise((r) => setTimeout(r, 2_500));

interface Target {
  readonly refId?: string;
  readonly expr?: string;
}
interface Panel {
  readonly title?: string;
  readonly type?: string;
  readonly targets?: readonly Target[];
  readonly panels?: readonly Panel[];
}

const allPanels = (panels: readonly Panel[] = []): Panel[] => panels.flatMap((p) => [p, ...allPanels(p.panels)]);

/** Every panel query of every board: `board / panel refId` and its PromQL. */
async function boardQueries(): Promise<{ where: string; expr: string }[]> {
  const files = (await readdir(BOARDS_DIR)).filter((f) => f.endsWith(".json")).sort();
  const queries: { where: string; expr: string }[] = [];
  for (const file of files) {
    const board = JSON.parse(await readFile(join(BOARDS_DIR, file), "utf8")) as { panels?: Panel[] };
    for (const panel of allPanels(board.panels)) {
      for (const target of panel.targets ?? []) {
        if (target.expr) queries.push({ where: `${file} / "${panel.title}" ${target.refId}`, expr: target.expr });
      }
    }
  }
  return queries;
}

/**
 * Grafana's variables as Grafana would fill them here: every model (the board's "All"), and a
 * rate interval that reaches back over the whole load (the load ran within the last minute).
 */
function filled(expr: string): string {
  return expr
    .replaceAll("$__rate_interval", "1m")
    .replaceAll("$__interval", "15s")
    .replaceAll("$__range", "1h")
    .replace(/\$\{?model\}?/g, ".*");
}

const storyPrompt = (topic: string): string => Array.from({ length: 30 }, (_, i) => `${topic} line ${i}.`).join(" ");

/** Traffic that touches every panel of a healthy deployment: success, errors, rejections, a disconnect. */
async function loadMocker(server: ServeProcess): Promise<void> {
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: KEY, maxRetries: 0 });
  const requests = (count: number) =>
    Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const prompt = `${"a shared system prompt for the fleet ".repeat(20)} question ${i}`;
        if (i % 2 === 0) {
          for await (const _chunk of await client.completions.create({ model: MOCKER, prompt, max_tokens: 12, stream: true })) {
            /* drain */
          }
        } else {
          await client.chat.completions.create({ model: MOCKER, messages: [{ role: "user", content: prompt }], max_tokens: 12 });
        }
      }),
    );
  await requests(2);
  await twoScrapes();
  await requests(24);
  await client.completions.create({ model: "no-such-model", prompt: "x", max_tokens: 1 }).catch(() => undefined);
  assert.equal((await fetch(`${server.url}/v1/models`)).status, 401, "a request without a key is rejected");
  // A client that goes away mid-stream.
  const controller = new AbortController();
  const res = await fetch(`${server.url}/v1/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${KEY}` },
    body: JSON.stringify({ model: MOCKER, prompt: "hello", max_tokens: 5000, stream: true }),
    signal: controller.signal,
  });
  await res.body?.getReader().read();
  controller.abort();
  // A reload of the keys file.
  server.child.kill("SIGHUP");
}

/** A prompt, another that evicts it from the one device sequence, the first again from the tiers. */
async function loadTiers(server: ServeProcess): Promise<void> {
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
  const complete = (topic: string) =>
    client.completions.create({ model: TINY, prompt: storyPrompt(topic), max_tokens: 8, temperature: 0 });
  for (const topic of ["shared", "other", "shared"]) await complete(topic);
  await twoScrapes();
  // The shared prompt comes back from the host tier a second time.
  for (const topic of ["other", "shared"]) await complete(topic);
}

/** Waits until the planner has decided and predicted at least once. */
async function plannerActed(server: ServeProcess): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const state = (await (await fetch(`${server.url}/v1/planner`, { headers: { authorization: `Bearer ${KEY}` } })).json()) as {
      decisions?: unknown[];
      predicted?: unknown;
    };
    if ((state.decisions?.length ?? 0) > 0 && state.predicted) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the planner made no decision and no prediction in 20 s");
}

/** A result with at least one finite value (a quantile of no observations is NaN: no data). */
function hasData(result: { value: [number, string] }[]): boolean {
  return result.some((sample) => Number.isFinite(Number(sample.value[1])));
}

describe("every Grafana panel query returns data through a real Prometheus", {
  skip: !havePrometheus() && "prometheus is not installed (apt-get install prometheus)",
}, () => {
  let mocker: ServeProcess;
  let tiers: ServeProcess;
  let prometheus: PrometheusServer;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "armature-panels-"));
    const keysFile = join(dir, "keys.yaml");
    await writeFile(keysFile, `- key: ${KEY}\n  name: panels\n`);
    [mocker, tiers] = await Promise.all([
      startServe([
        ...["--engine", "mocker", "--workers", "2", "--prefill", "1", "--speedup-ratio", "10"],
        ...[
          "--planner",
          "sla",
          "--profile",
          PROFILE,
          "--planner-interval",
          "2",
          "--planner-load-interval",
          "1",
          "--max-workers",
          "4",
        ],
        ...["--api-keys-file", keysFile],
      ]),
      startServe(
        [
          ...["--sequences", "1", "--context-size", "1024", "--kv-host-bytes", "4000000"],
          ...["--kv-disk-dir", join(dir, "kv-disk"), "--kv-disk-filter", "off"],
        ],
        { ARMATURE_CACHE_DIR: join(dir, "models") },
      ),
    ]);
    prometheus = await startPrometheus([mocker.url, tiers.url].map((url) => new URL(url).host));
    await Promise.all([loadMocker(mocker), loadTiers(tiers), plannerActed(mocker)]);
  });

  after(async () => {
    await prometheus?.stop();
    const codes = await Promise.all([mocker?.stop(), tiers?.stop()]);
    await rm(dir, { recursive: true, force: true });
    assert.deepEqual(codes, [0, 0]);
  });

  it("scrapes both deployments", async () => {
    const up = await prometheus.query("up");
    assert.equal(up.length, 2);
    assert.ok(up.every((s) => s.value[1] === "1"));
  });

  it("answers every query but those that count failures", async () => {
    const queries = await boardQueries();
    assert.ok(queries.length > 50, `${queries.length} queries`);
    const expectEmpty = ({ expr }: { expr: string }): boolean =>
      Object.keys(NO_DATA_WITHOUT_FAILURES).some((name) => expr.includes(name));
    const empty = async (): Promise<string[]> => {
      const found: string[] = [];
      for (const q of queries) if (!hasData(await prometheus.query(filled(q.expr)))) found.push(q.where);
      return found;
    };
    const expected = queries.filter(expectEmpty).map((q) => q.where);
    // Scrapes come every second: wait until the last of the load shows (or give up after 30 s).
    let missing = await empty();
    for (let i = 0; i < 30 && missing.join("\n") !== expected.join("\n"); i++) {
      await new Promise((r) => setTimeout(r, 1000));
      missing = await empty();
    }
    assert.deepEqual(missing, expected);
  });
});
