// Does batching change greedy output? 54 prompts of the e2e test against a fresh aggregated server
// with 4 requests in flight and then one at a time, and against a fresh disaggregated server (1
// prefill + 1 decode worker) with 4 in flight; counts the completions that differ from the
// aggregated one-at-a-time output. Usage: node --import tsx bench/batch-invariance.ts [rounds]
import OpenAI from "openai";
import { GREEDY_PROMPTS } from "../test/fixtures/greedy-prompts.js";
import { startServe } from "../test/helpers/armature-process.js";
import { pool } from "../test/helpers/pool.js";
import { machine } from "./load/processes.js";

const rounds = Number(process.argv[2] ?? 3);
const prompts = GREEDY_PROMPTS;
const common = ["--context-size", "256", "--sequences", "4"];

async function completions(url: string, width: number): Promise<string[]> {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
  return pool(prompts, width, async (prompt) => {
    const r = await client.completions.create({ model: "armature-tiny", prompt, max_tokens: 24, temperature: 0 });
    return r.choices[0]?.text ?? "";
  });
}

const differ = (a: string[], b: string[]): number => a.filter((text, i) => text !== b[i]).length;

console.log(`batch invariance — ${machine()} — ${prompts.length} greedy prompts, 24 tokens each\n`);
console.log("| round | aggregated, 4 in flight | disaggregated, 4 in flight |");
console.log("|---:|---:|---:|");
for (let round = 1; round <= rounds; round++) {
  const [aggregated, split] = await Promise.all([
    startServe([...common, "--workers", "1"]),
    startServe([...common, "--prefill", "1", "--decode", "1"]),
  ]);
  try {
    // Both servers start cold, so the 4-in-flight runs batch prompts as a fresh server would.
    const aggregatedBatched = await completions(aggregated.url, 4);
    const splitBatched = await completions(split.url, 4);
    const reference = await completions(aggregated.url, 1);
    console.log(
      `| ${round} | ${differ(aggregatedBatched, reference)} of 54 differ | ${differ(splitBatched, reference)} of 54 differ |`,
    );
  } finally {
    await Promise.all([aggregated.stop(), split.stop()]);
  }
}
