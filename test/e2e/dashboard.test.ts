import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import OpenAI, { toFile } from "openai";
import type { Browser, Page } from "puppeteer-core";
import { type ServeProcess, startServe } from "../helpers/armature-process.js";
import { haveChromium, launchChromium } from "../helpers/chromium.js";

const MODEL = "armature-mocker";
const LOAD_REQUESTS = 36;

async function healthIds(url: string): Promise<string[]> {
  const health = (await (await fetch(`${url}/health`)).json()) as { instances: { id: string }[] };
  return health.instances.map((i) => i.id).sort();
}

// Functions run in the page are given as text: this project's TypeScript has no DOM types.
const UPDATES = "Number(document.body.dataset.updates ?? 0)";

/** Waits for the page to draw `/v1/fleet` once more than it had (it polls every 250 ms here). */
async function nextUpdate(page: Page): Promise<void> {
  const seen = Number(await page.evaluate(UPDATES));
  await page.waitForFunction(`${UPDATES} > ${seen}`, { timeout: 15_000 });
}

const workerRows = (page: Page, count: number): Promise<unknown> =>
  page.waitForFunction(`document.querySelectorAll("#workers tbody tr").length === ${count}`, { timeout: 15_000 });

const text = (page: Page, selector: string): Promise<string> => page.$eval(selector, (e) => e.textContent ?? "");

/** "a / b / c ms" as numbers, or undefined when the tile shows none. */
function percentileTile(shown: string): number[] | undefined {
  const match = /^([\d.,]+) \/ ([\d.,]+) \/ ([\d.,]+) ms$/.exec(shown);
  return match ? match.slice(1).map((n) => Number(n.replaceAll(",", ""))) : undefined;
}

describe("the dashboard in headless Chromium", {
  skip: !haveChromium() && "chromium is not installed (apt-get install chromium)",
}, () => {
  let server: ServeProcess;
  let browser: Browser;
  let page: Page;
  let batchDir: string;
  const requested: string[] = [];

  before(async () => {
    batchDir = await mkdtemp(join(tmpdir(), "armature-dashboard-batches-"));
    server = await startServe(["--engine", "mocker", "--workers", "3", "--speedup-ratio", "100", "--batch-dir", batchDir]);
    browser = await launchChromium();
    page = await browser.newPage();
    page.on("request", (request) => requested.push(request.url()));
    await page.setViewport({ width: 1400, height: 1000 });
    await page.goto(`${server.url}/dashboard?interval=250`);
  });

  after(async () => {
    await browser?.close();
    assert.equal(await server?.stop(), 0);
  });

  it("shows the three workers /health lists, each ready, before any request", async () => {
    const ids = await healthIds(server.url);
    assert.equal(ids.length, 3);
    await workerRows(page, 3);
    const rows = await page.$$eval("#workers tbody tr", (trs) =>
      trs.map((tr) => ({ id: tr.getAttribute("data-worker-id"), cells: [...tr.children].map((td) => td.textContent) })),
    );
    assert.deepEqual(rows.map((r) => r.id).sort(), ids);
    for (const row of rows) {
      assert.deepEqual(row.cells.slice(0, 4), [row.id, "aggregated", MODEL, "mocker"]);
    }
    await page.waitForFunction(
      `[...document.querySelectorAll("#workers tbody tr td:nth-child(5)")].every((td) => td.textContent === "ready")`,
      { timeout: 15_000 },
    );
    assert.equal(await text(page, "#stat-requests"), "0");
    assert.equal(await text(page, "#stat-ttft"), "–");
  });

  it("counts the requests of a load, shows their TTFT and ITL percentiles and where each went", async () => {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const served = new Map<string, number>();
    await Promise.all(
      Array.from({ length: LOAD_REQUESTS }, async (_, i) => {
        const { response } = await client.completions
          .create({ model: MODEL, prompt: `request ${i} of the dashboard load`, max_tokens: 8 })
          .withResponse();
        const worker = response.headers.get("x-armature-worker") ?? "";
        served.set(worker, (served.get(worker) ?? 0) + 1);
      }),
    );
    await page.waitForFunction(`document.getElementById("stat-requests").textContent === "${LOAD_REQUESTS}"`, {
      timeout: 15_000,
    });
    await nextUpdate(page);
    assert.equal(await text(page, "#stat-errors"), "0");
    assert.ok(Number(await text(page, "#stat-rate")) > 0, "a request rate");
    for (const tile of ["#stat-ttft", "#stat-itl"]) {
      const shown = await text(page, tile);
      const [p50, p90, p99] = percentileTile(shown) ?? [];
      assert.ok(p50 !== undefined && p90 !== undefined && p99 !== undefined, `${tile}: ${shown}`);
      assert.ok(p50 <= p90 && p90 <= p99, `${tile} percentiles in order: ${shown}`);
    }
    // The "routed (1 min)" column: what each worker's x-armature-worker header said.
    const routed = await page.$$eval("#workers tbody tr", (trs) =>
      trs.map((tr) => [tr.getAttribute("data-worker-id") ?? "", Number(tr.children[9]?.textContent)] as const),
    );
    assert.deepEqual(new Map(routed.filter(([, n]) => n > 0)), served);
    const recent = await page.$$eval("#routes tbody tr td:nth-child(3)", (tds) => tds.map((td) => td.textContent ?? ""));
    assert.equal(recent.length, 20, "the last 20 routing decisions");
    assert.ok(recent.every((id) => served.has(id)));
  });

  it("shows a batch's progress: none at first, then the batch with its requests done", async () => {
    assert.match(await text(page, "#batches-summary"), /^No batches yet/);
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const lines = [0, 1, 2].map((i) =>
      JSON.stringify({
        custom_id: `d${i}`,
        method: "POST",
        url: "/v1/completions",
        body: { model: MODEL, prompt: "hi", max_tokens: 3 },
      }),
    );
    const file = await client.files.create({ file: await toFile(Buffer.from(lines.join("\n")), "d.jsonl"), purpose: "batch" });
    const batch = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/completions", completion_window: "24h" });
    await page.waitForFunction(
      `[...document.querySelectorAll("#batches tbody tr")].some((tr) => tr.children[0].textContent === "${batch.id}" && tr.children[2].textContent === "completed" && tr.children[3].textContent === "3 / 3")`,
      { timeout: 15_000 },
    );
    assert.equal(await text(page, "#batches tbody tr td:nth-child(6)"), "100.0%");
  });

  it("loads everything from the frontend itself and draws the charts with uPlot", async () => {
    assert.ok(requested.length > 0);
    assert.deepEqual(
      requested.filter((url) => !url.startsWith(`${server.url}/`)),
      [],
    );
    assert.ok(requested.includes(`${server.url}/dashboard/uPlot.iife.min.js`));
    assert.equal(await page.$$eval(".uplot canvas", (c) => c.length), 3);
  });
});

describe("the dashboard behind API keys", {
  skip: !haveChromium() && "chromium is not installed (apt-get install chromium)",
}, () => {
  const KEY = "sk-dashboard-test-key";
  let server: ServeProcess;
  let browser: Browser;

  before(async () => {
    server = await startServe(["--engine", "mocker", "--workers", "2", "--speedup-ratio", "100", "--api-key", KEY]);
    browser = await launchChromium();
  });

  after(async () => {
    await browser?.close();
    assert.equal(await server?.stop(), 0);
  });

  it("serves the page without a key but /v1/fleet only with one", async () => {
    assert.equal((await fetch(`${server.url}/dashboard`)).status, 200);
    assert.equal((await fetch(`${server.url}/dashboard/dashboard.js`)).status, 200);
    assert.equal((await fetch(`${server.url}/v1/fleet`)).status, 401);
    assert.equal((await fetch(`${server.url}/v1/fleet`, { headers: { authorization: "Bearer wrong" } })).status, 401);
    const fleet = await fetch(`${server.url}/v1/fleet`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(fleet.status, 200);
    const body = (await fleet.json()) as { workers: { id: string }[] };
    assert.deepEqual(body.workers.map((w) => w.id).sort(), await healthIds(server.url));
  });

  it("asks for the key, then shows the fleet with the key it is given", async () => {
    const page = await browser.newPage();
    await page.goto(`${server.url}/dashboard?interval=250`);
    await page.waitForSelector("#key-form:not([hidden])", { timeout: 15_000 });
    assert.equal(await page.$$eval("#workers tbody tr", (rows) => rows.length), 0);
    await page.type("#key-input", KEY);
    await page.click("#key-form button");
    await workerRows(page, 2);
    assert.equal(await page.$eval("#key-form", (form) => form.hasAttribute("hidden")), true);
  });
});
