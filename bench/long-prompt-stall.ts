// Long prompts and the streams already running: `armature serve --engine mocker --workers 2`, 32
// streams pinned to the first worker, then 4 requests with 100,000-token prompts pinned to the
// second (so the modelled engine never makes one wait for the other: what is measured is what the
// frontend, the router and the process's event loop do to the running streams while the long prompts
// are read, templated, tokenized, hashed and routed). Reports the 32 streams' inter-token gaps (each
// token's arrival at the client minus the previous token's of the same stream) in the second before
// the long prompts are sent and in the second after, p50 / p90 / p99 / max, and the p99s' ratio.
// Usage: npm run bench:long-prompts [-- rounds]
import { Agent, request } from "node:http";
import { longPrompt } from "./load/long-prompt.js";
import { machine, spawnServer } from "./load/processes.js";

const STREAMS = 32;
const LONG_PROMPTS = 4;
const LONG_PROMPT_TOKENS = 100_000;
/** The windows compared: the second after the long prompts are sent, and a second before it. */
const WINDOW_MS = 1000;
const rounds = Number(process.argv[2] ?? 3);

/** Arrival times of every token of one stream. */
interface StreamTimes {
  readonly arrivals: number[];
}

function post(agent: Agent, url: string, body: unknown, onEvent?: (data: string) => void): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: "POST", agent, headers: { "content-type": "application/json" } }, (res) => {
      let buffered = "";
      res.setEncoding("utf8");
      res.on("data", (text: string) => {
        buffered += text;
        for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
          const event = buffered.slice(0, end);
          buffered = buffered.slice(end + 2);
          if (event.startsWith("data: ")) onEvent?.(event.slice(6));
        }
      });
      res.on("end", () => resolve(res.statusCode ?? 0));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

/** Gaps that ended inside [from, to), over every stream. */
function gapsIn(streams: readonly StreamTimes[], from: number, to: number): number[] {
  const gaps: number[] = [];
  for (const { arrivals } of streams) {
    for (let i = 1; i < arrivals.length; i++) {
      const at = arrivals[i] as number;
      if (at >= from && at < to) gaps.push(at - (arrivals[i - 1] as number));
    }
  }
  return gaps.sort((a, b) => a - b);
}

const server = await spawnServer([
  "bin/armature.js",
  "serve",
  "--engine",
  "mocker",
  "--workers",
  "2",
  "--context-size",
  "131072",
  "--port",
  "0",
  "--log-level",
  "warn",
]);
const fmt = (n: number): string => n.toFixed(1);
try {
  const health = (await (await fetch(`${server.url}/health`)).json()) as { instances: { id: string }[] };
  const ids = health.instances.map((i) => i.id);
  if (ids.length < 2) throw new Error(`expected 2 workers, /health lists ${ids.length}`);
  const [streamWorker, longWorker] = ids;
  console.log(`long prompts and running streams — ${machine()}\n`);
  console.log(`${STREAMS} streams on one mocker worker, ${LONG_PROMPTS} prompts of ${LONG_PROMPT_TOKENS} tokens on the other\n`);
  console.log("| round | window | gaps | p50 ms | p90 ms | p99 ms | max ms | long prompts answered in ms |");
  console.log("|---:|---|---:|---:|---:|---:|---:|---:|");
  const ratios: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    const agent = new Agent({ keepAlive: true, maxSockets: 64 });
    const streams: StreamTimes[] = Array.from({ length: STREAMS }, () => ({ arrivals: [] }));
    const running = streams.map((s, i) =>
      post(
        agent,
        `${server.url}/v1/completions`,
        {
          model: "armature-mocker",
          prompt: `stream ${round}-${i} `,
          max_tokens: 4000,
          stream: true,
          nvext: { backend_instance_id: streamWorker },
        },
        (data) => {
          if (data !== "[DONE]") s.arrivals.push(performance.now());
        },
      ),
    );
    // Let every stream reach its steady state, then take a quiet window as long as the loud one.
    await new Promise((r) => setTimeout(r, 1500));
    const quietFrom = performance.now();
    await new Promise((r) => setTimeout(r, WINDOW_MS));
    const loudFrom = performance.now();
    const longRequests = Array.from({ length: LONG_PROMPTS }, (_, k) =>
      post(agent, `${server.url}/v1/completions`, {
        model: "armature-mocker",
        // The mocker's tokenizer is byte-level: one token per character.
        prompt: longPrompt(round * LONG_PROMPTS + k, LONG_PROMPT_TOKENS),
        max_tokens: 1,
        nvext: { backend_instance_id: longWorker },
      }),
    );
    const statuses = await Promise.all(longRequests);
    const answeredIn = performance.now() - loudFrom;
    if (statuses.some((s) => s !== 200)) throw new Error(`long prompts answered ${statuses.join(", ")}`);
    const quiet = gapsIn(streams, quietFrom, quietFrom + WINDOW_MS);
    const loud = gapsIn(streams, loudFrom, loudFrom + WINDOW_MS);
    for (const [name, gaps] of [
      ["quiet", quiet],
      ["long prompts arriving", loud],
    ] as const) {
      console.log(
        `| ${round} | ${name} | ${gaps.length} | ${fmt(quantile(gaps, 0.5))} | ${fmt(quantile(gaps, 0.9))} | ${fmt(quantile(gaps, 0.99))} | ${fmt(gaps.at(-1) ?? Number.NaN)} | ${name === "quiet" ? "" : fmt(answeredIn)} |`,
      );
    }
    ratios.push(quantile(loud, 0.99) / quantile(quiet, 0.99));
    // End the streams: the server cancels them when their connections close.
    agent.destroy();
    await Promise.allSettled(running);
  }
  console.log(`\ngap p99 with long prompts arriving / without, per round: ${ratios.map((r) => `${r.toFixed(2)}×`).join(", ")}`);
} finally {
  await server.stop();
}
