// Structured output over JSONSchemaBench (guidance-ai/jsonschemabench): its real schemas through
// armature's JSON Schema compiler (src/grammar), the code every constrained request takes.
//   1. compile: per set, the first N schemas by file name: refused (a keyword armature cannot
//      enforce, named), compiled, and compile time p50/p99;
//   2. instances: the benchmark's own instances (maskbench/data), judged valid or invalid by
//      @cfworker/json-schema (the schema's draft, formats asserted), through the compiled grammars,
//      no model: invalid instances accepted (must be 0) and valid ones accepted;
//   3. generation: the first G compiled schemas per set through `armature serve` (the default
//      model, response_format json_schema, greedy, 384 tokens at most): outputs valid, invalid
//      (must be 0; judged as in 2), cut short by max_tokens; and decode tokens/s under grammars against free text.
// Usage: node --import tsx bench/structured-output.ts --data DIR [--per-set 100] [--generate 10]
//   DIR holds jsonschemabench's data/ and maskbench/data/ (a checkout of the repository).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Validator } from "@cfworker/json-schema";
import { compileJsonSchema, grammarSize, matchesGrammar, SchemaRefusal } from "../src/grammar/index.js";
import { machine, spawnServer } from "./load/processes.js";

const { values } = parseArgs({
  options: {
    data: { type: "string" },
    "per-set": { type: "string", default: "100" },
    generate: { type: "string", default: "10" },
  },
});
if (!values.data) throw new Error("--data DIR: a checkout of guidance-ai/jsonschemabench");
const PER_SET = Number(values["per-set"]);
const GENERATE = Number(values.generate);
const SETS = [
  "Glaiveai2K",
  "Github_trivial",
  "Github_easy",
  "Github_medium",
  "Github_hard",
  "Github_ultra",
  "Kubernetes",
  "Snowplow",
  "JsonSchemaStore",
  "WashingtonPost",
];

/** A validator for the draft the schema names ($schema; 2020-12 when it names none), formats asserted. */
function validatorFor(schema: unknown): (data: unknown) => { valid: boolean | undefined; why: string } {
  const named = String((schema as { $schema?: unknown })?.$schema ?? "");
  const draft = named.includes("draft-04")
    ? "4"
    : named.includes("draft-06") || named.includes("draft-07")
      ? "7"
      : named.includes("2019-09")
        ? "2019-09"
        : "2020-12";
  let validator: Validator;
  try {
    validator = new Validator(schema as object, draft, false);
  } catch (error) {
    return () => ({ valid: undefined, why: (error as Error).message });
  }
  return (data) => {
    try {
      const result = validator.validate(data);
      const why = result.errors
        .slice(-2)
        .map((e) => `${e.instanceLocation} ${e.error}`)
        .join("; ");
      return { valid: result.valid, why };
    } catch (error) {
      // The validator cannot read the schema (e.g. a pattern that is no Unicode regular expression).
      return { valid: undefined, why: (error as Error).message };
    }
  };
}

const pct = (n: number, d: number) => (d === 0 ? "–" : `${((100 * n) / d).toFixed(1)}%`);
const quantile = (xs: number[], q: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? Number.NaN;

console.log(`Structured output over JSONSchemaBench — ${machine()}\n`);
console.log(`### 1. Compile: the first ${PER_SET} schemas of each set\n`);
console.log("| set | schemas | refused | compiled | compile p50 / p99 (ms) | grammar size p50 | most refused keywords |");
console.log("|---|---:|---:|---:|---:|---:|---|");
const compiledBySet = new Map<string, { name: string; schema: unknown }[]>();
for (const set of SETS) {
  const dir = join(values.data, "data", set);
  const files = readdirSync(dir).sort().slice(0, PER_SET);
  let refused = 0;
  const times: number[] = [];
  const sizes: number[] = [];
  const keywords = new Map<string, number>();
  const compiled: { name: string; schema: unknown }[] = [];
  for (const file of files) {
    const schema = JSON.parse(readFileSync(join(dir, file), "utf8")) as unknown;
    const started = performance.now();
    try {
      const grammar = compileJsonSchema(schema);
      times.push(performance.now() - started);
      sizes.push(grammarSize(grammar));
      compiled.push({ name: file, schema });
    } catch (error) {
      times.push(performance.now() - started);
      if (!(error instanceof SchemaRefusal)) throw new Error(`${set}/${file}: the compiler failed: ${(error as Error).stack}`);
      refused++;
      keywords.set(error.keyword, (keywords.get(error.keyword) ?? 0) + 1);
    }
  }
  compiledBySet.set(set, compiled);
  const top = [...keywords]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 4)
    .map(([k, n]) => `${k} ${n}`)
    .join(", ");
  console.log(
    `| ${set} | ${files.length} | ${pct(refused, files.length)} | ${pct(compiled.length, files.length)} | ${quantile(times, 0.5).toFixed(2)} / ${quantile(times, 0.99).toFixed(2)} | ${quantile(sizes, 0.5)} | ${top} |`,
  );
}

console.log("\n### 2. The benchmark's own instances through the compiled grammars (compact JSON, no model)\n");
console.log("| set | schemas with instances | valid instances accepted | invalid instances accepted |");
console.log("|---|---:|---:|---:|");
const maskDir = join(values.data, "maskbench", "data");
const maskFiles = readdirSync(maskDir).sort();
for (const set of SETS) {
  let schemas = 0;
  let valid = 0;
  let validAccepted = 0;
  let invalid = 0;
  let invalidAccepted = 0;
  for (const file of maskFiles.filter((f) => f.startsWith(`${set}---`)).slice(0, PER_SET)) {
    const entry = JSON.parse(readFileSync(join(maskDir, file), "utf8")) as {
      schema: unknown;
      tests: { valid: boolean; data: unknown }[];
    };
    if (!entry.tests?.length) continue;
    let grammar: ReturnType<typeof compileJsonSchema>;
    try {
      grammar = compileJsonSchema(entry.schema);
    } catch {
      continue;
    }
    schemas++;
    const validate = validatorFor(entry.schema);
    for (const instance of entry.tests) {
      const accepted = matchesGrammar(grammar, JSON.stringify(instance.data));
      // Judged by the validator, not the dataset's label (some generated "negatives" are valid).
      const verdict = validate(instance.data).valid;
      if (verdict === undefined) continue;
      if (verdict) {
        valid++;
        if (accepted) validAccepted++;
      } else {
        invalid++;
        if (accepted) invalidAccepted++;
      }
    }
  }
  console.log(
    `| ${set} | ${schemas} | ${validAccepted} of ${valid} (${pct(validAccepted, valid)}) | ${invalidAccepted} of ${invalid} |`,
  );
}

console.log(`\n### 3. Generation: the first ${GENERATE} compiled schemas of each set through armature serve\n`);
const server = await spawnServer(["bin/armature.js", "serve", "--port", "0", "--log-level", "warn", "--context-size", "4096"]);
async function complete(
  body: Record<string, unknown>,
): Promise<{ status: number; text: string; finish: string; tokens: number; ms: number }> {
  const started = performance.now();
  const response = await fetch(`${server.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "armature-tiny",
      messages: [{ role: "user", content: "Answer in JSON." }],
      temperature: 0,
      max_tokens: 384,
      ...body,
    }),
  });
  const json = (await response.json()) as {
    choices?: { message: { content: string }; finish_reason: string }[];
    usage?: { completion_tokens: number };
  };
  return {
    status: response.status,
    text: json.choices?.[0]?.message.content ?? "",
    finish: json.choices?.[0]?.finish_reason ?? "",
    tokens: json.usage?.completion_tokens ?? 0,
    ms: performance.now() - started,
  };
}
console.log(
  "| set | generated | valid | invalid | cut short (max_tokens) | refused by the server | tokens/s under the grammar |",
);
console.log("|---|---:|---:|---:|---:|---:|---:|");
let constrainedTokens = 0;
let constrainedMs = 0;
try {
  for (const set of SETS) {
    let valid = 0;
    let invalid = 0;
    let cut = 0;
    let refused = 0;
    let tokens = 0;
    let ms = 0;
    const sample = (compiledBySet.get(set) ?? []).slice(0, GENERATE);
    for (const { name, schema } of sample) {
      const result = await complete({ response_format: { type: "json_schema", json_schema: { name: "out", schema } } });
      if (result.status !== 200) {
        refused++;
        continue;
      }
      tokens += result.tokens;
      ms += result.ms;
      if (result.finish === "length") {
        cut++;
        continue;
      }
      let verdict: { valid: boolean | undefined; why: string } = { valid: false, why: "not JSON" };
      try {
        verdict = validatorFor(schema)(JSON.parse(result.text));
      } catch {}
      if (verdict.valid) valid++;
      else {
        invalid++;
        console.error(`${set}/${name}: INVALID (${verdict.why}) ${result.text.slice(0, 300)}`);
      }
    }
    constrainedTokens += tokens;
    constrainedMs += ms;
    console.log(
      `| ${set} | ${sample.length} | ${valid} | ${invalid} | ${cut} | ${refused} | ${((1000 * tokens) / ms).toFixed(0)} |`,
    );
  }
  let freeTokens = 0;
  let freeMs = 0;
  for (let i = 0; i < 20; i++) {
    const result = await complete({ max_tokens: 384, ignore_eos: true, seed: i });
    freeTokens += result.tokens;
    freeMs += result.ms;
  }
  console.log(
    `\nDecode rate, request to last token: under the grammars ${((1000 * constrainedTokens) / constrainedMs).toFixed(0)} tokens/s, free text ${((1000 * freeTokens) / freeMs).toFixed(0)} tokens/s.`,
  );
} finally {
  await server.stop();
}
