// Takes the README's picture of the dashboard: starts `armature serve` on the mocker (3 decode
// workers, 1 prefill worker, the load planner), sends a mixed load with shared prompt prefixes for
// a while, and writes a screenshot of /dashboard taken in headless Chromium (Debian's).
//
//   node --import tsx bench/dashboard-screenshot.ts [--out docs/images/dashboard.png] [--seconds 40]
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import puppeteer from "puppeteer-core";

const { values } = parseArgs({
  options: {
    out: { type: "string", default: "docs/images/dashboard.png" },
    seconds: { type: "string", default: "40" },
  },
});
const BIN = fileURLToPath(new URL("../bin/armature.js", import.meta.url));
const MODEL = "armature-mocker";
const SERVE_ARGS = [
  "serve",
  ...["--engine", "mocker", "--port", "0", "--log-level", "warn", "--speedup-ratio", "4"],
  ...["--workers", "3", "--prefill", "1", "--disagg-threshold", "300"],
  ...["--planner", "load", "--slo-ttft", "400", "--slo-itl", "40", "--max-workers", "6", "--planner-load-interval", "2"],
];

/** Starts serve and resolves with its URL once it prints where it listens. */
function startServe(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [BIN, ...SERVE_ARGS], { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    let printed = "";
    child.stdout?.on("data", (chunk: Buffer) => {
      printed += chunk.toString();
      const match = /at (https?:\/\/\S+)\/v1/.exec(printed);
      if (match?.[1]) resolve({ url: match[1], child });
    });
    child.once("exit", (code) => reject(new Error(`armature serve exited with ${code}:\n${printed}`)));
  });
}

/** Some conversations share long system prompts (KV hits), some are long enough to be disaggregated. */
function prompt(i: number): string {
  const system = `You are assistant number ${i % 4}. `.repeat(40);
  const question = `Question ${i}: ${"tell me more about the fleet ".repeat(1 + (i % 7) * 6)}`;
  return system + question;
}

async function load(url: string, until: number): Promise<number> {
  let sent = 0;
  const client = async (): Promise<void> => {
    while (Date.now() < until) {
      const i = sent++;
      const res = await fetch(`${url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: MODEL, prompt: prompt(i), max_tokens: 16 + (i % 5) * 24, stream: i % 2 === 0 }),
      });
      await res.text();
    }
  };
  await Promise.all(Array.from({ length: 12 }, client));
  return sent;
}

const { url, child } = await startServe();
const browser = await puppeteer.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ["--no-sandbox"] });
try {
  const page = await browser.newPage();
  await page.setViewport({ width: 1440, height: 1100, deviceScaleFactor: 1 });
  await page.goto(`${url}/dashboard?interval=1000`);
  const seconds = Number(values.seconds);
  const loading = load(url, Date.now() + seconds * 1000);
  // The picture is taken under load: two polls after most of it ran.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, seconds - 4) * 1000));
  const seen = Number(await page.evaluate("Number(document.body.dataset.updates ?? 0)"));
  await page.waitForFunction(`Number(document.body.dataset.updates ?? 0) >= ${seen + 2}`, { timeout: 10_000 });
  await mkdir(dirname(values.out), { recursive: true });
  await page.screenshot({ path: values.out as `${string}.png`, fullPage: true });
  const sent = await loading;
  process.stdout.write(`${sent} requests sent; wrote ${values.out}\n`);
} finally {
  await browser.close();
  child.kill("SIGTERM");
}
