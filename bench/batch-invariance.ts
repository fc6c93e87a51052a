// Does batching change greedy output? 54 prompts of the e2e test against a fresh aggregated server
// with 4 requests in flight and then one at a time, and against a fresh disaggregated server (1
// prefill + 1 decode worker) with 4 in flight; counts the completions that differ from the
// aggregated one-at-a-time output. Usage: node --import tsx bench/batch-invariance.ts [rounds]
import OpenAI from "openai";
import { startServe } from "../test/helpers/armature-process.js";
import { machine } from "./load/processes.js";

const rounds = Number(process.argv[2] ?? 3);
const subjects = ["The river", "A quiet robot", "Seven small birds", "My grandmother's kitchen", "The last train", "Numbers"];
const verbs = ["remembers", "counts", "sings about", "waits for", "draws", "forgets", "explains", "follows", "builds"];
const prompts = Array.from({ length: 54 }, (_, i) => `${subjects[i % subjects.length]} ${verbs[i % verbs.length]} ${i} things`);
const common = ["--context-size", "256", "--sequences", "4"];

async function completions(url: string, width: number): Promise<string[]> {
  const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
  const out: string[] = new Array(prompts.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < prompts.length) {
        const i = next++;
        const r = await client.completions.create({
          model: "armature-tiny",
          prompt: prompts[i] as string,
          max_tokens: 24,
          temperature: 0,
        });
        out[i] = r.choices[0]?.text ?? "";
      }
    }),
  );
  return out;
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
