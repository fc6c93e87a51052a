// What a grammar's size costs llama.cpp: objects of K strings of at most 255 characters each
// (each bounded string written out as 255 copies of a character rule), compiled by armature's
// compiler, then 20 tokens generated under each with the default model through node-llama-cpp;
// the same 20 tokens without a grammar first. The figures behind MAX_GRAMMAR_SIZE.
//
// Usage: node --import tsx bench/grammar-size-cost.ts [K …]   (default 10 40 200)

import { getLlama, LlamaCompletion, type LlamaGrammar } from "node-llama-cpp";
import { ensureTinyModel } from "../src/engines/tiny-model/model-cache.js";
import { compileJsonSchema, grammarSize, toGbnf } from "../src/grammar/index.js";

const counts = process.argv.slice(2).map(Number);
const llama = await getLlama({ gpu: false });
const model = await llama.loadModel({ modelPath: await ensureTinyModel() });
const context = await model.createContext({ contextSize: 1024 });

async function generate(grammar: LlamaGrammar | undefined): Promise<number> {
  const sequence = context.getSequence();
  const started = performance.now();
  await new LlamaCompletion({ contextSequence: sequence }).generateCompletion("Answer:", { grammar, maxTokens: 20 });
  sequence.dispose();
  return performance.now() - started;
}

console.log(`| strings | grammar size (parts, written out) | 20 tokens (ms) | RSS after (MiB) |`);
console.log("|---:|---:|---:|---:|");
console.log(`| no grammar | – | ${(await generate(undefined)).toFixed(0)} | ${process.memoryUsage().rss >> 20} |`);
for (const k of counts.length > 0 ? counts : [10, 40, 200]) {
  const properties = Object.fromEntries(Array.from({ length: k }, (_, i) => [`p${i}`, { type: "string", maxLength: 255 }]));
  const compiled = compileJsonSchema({ type: "object", properties, required: Object.keys(properties) });
  const grammar = await llama.createGrammar({ grammar: toGbnf(compiled) });
  const ms = await generate(grammar);
  console.log(`| ${k} | ${grammarSize(compiled)} | ${ms.toFixed(0)} | ${process.memoryUsage().rss >> 20} |`);
}
await context.dispose();
await model.dispose();
