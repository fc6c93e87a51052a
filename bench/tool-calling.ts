// The cost of constrained decoding for tool calls: decode tokens/s of the generated tiny model
// through `armature serve`, the same chat prompt (tools declared) answered freely
// (`tool_choice: "none"`, end-of-sequence ignored) and under the grammar of a named function
// (`tool_choice: {"type":"function",…}`), each free answer as long as the constrained one before
// it. Rounds alternate; the best round of each (the least disturbed on a shared machine) and medians.
// Usage: node --import tsx bench/tool-calling.ts [rounds]
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { machine, spawnServer } from "./load/processes.js";

const ROUNDS = Number(process.argv[2] ?? 15);
const MODEL = "armature-tiny";
/** A call of about 400 tokens: 100 colour words (enum) in a list, so the grammar is at work throughout. */
const tools = [
  {
    type: "function",
    function: {
      name: "paint",
      description: "Paint stripes in these colours",
      parameters: {
        type: "object",
        properties: { colours: { type: "array", items: { enum: ["red", "green", "blue"] }, minItems: 100, maxItems: 100 } },
        required: ["colours"],
      },
    },
  },
];
const messages = [{ role: "user", content: "Paint the fence in stripes, please." }];

interface Answer {
  readonly tokens: number;
  readonly seconds: number;
  readonly finish: string;
}

async function chat(url: string, body: Record<string, unknown>): Promise<Answer> {
  const started = performance.now();
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: MODEL, messages, tools, temperature: 0, ...body }),
  });
  const json = (await res.json()) as { usage: { completion_tokens: number }; choices: { finish_reason: string }[] };
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${JSON.stringify(json)}`);
  return {
    tokens: json.usage.completion_tokens,
    seconds: (performance.now() - started) / 1000,
    finish: json.choices[0]?.finish_reason ?? "",
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
const cacheDir = await mkdtemp(join(tmpdir(), "armature-bench-tools-"));
process.env.ARMATURE_CACHE_DIR = cacheDir;
const server = await spawnServer(["bin/armature.js", "serve", "--context-size", "2048", "--port", "0", "--log-level", "warn"]);
const free: number[] = [];
const constrained: number[] = [];
let tokens = 0;
try {
  const named = { tool_choice: { type: "function", function: { name: "paint" } }, max_tokens: 1500 };
  const warm = await chat(server.url, named); // compiles and caches the grammar
  await chat(server.url, { tool_choice: "none", max_tokens: warm.tokens, ignore_eos: true });
  for (let i = 0; i < ROUNDS; i++) {
    const c = await chat(server.url, named);
    if (c.finish !== "tool_calls") throw new Error(`the constrained answer ended with ${c.finish}`);
    const f = await chat(server.url, { tool_choice: "none", max_tokens: c.tokens, ignore_eos: true });
    constrained.push(c.tokens / c.seconds);
    free.push(f.tokens / f.seconds);
    tokens = c.tokens;
  }
} finally {
  await server.stop();
}
const best = (xs: number[]) => Math.max(...xs);
console.log(`tool-call constrained decoding — ${machine()} — tiny model, ${tokens} tokens per answer, ${ROUNDS} rounds\n`);
console.log("| answer | tokens/s, best round | tokens/s, median |");
console.log("|---|---:|---:|");
console.log(`| free text (tool_choice none) | ${best(free).toFixed(0)} | ${median(free).toFixed(0)} |`);
console.log(`| named tool call (grammar) | ${best(constrained).toFixed(0)} | ${median(constrained).toFixed(0)} |`);
console.log(`\nconstrained / free, best rounds: ${((100 * best(constrained)) / best(free)).toFixed(1)}%`);
