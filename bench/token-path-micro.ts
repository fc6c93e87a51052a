// Three small costs of a request's path, each alone in a loop (median of 5 rounds):
//   - the incremental detokenizer over the byte tokenizer (the mocker's), per token streamed, on a
//     text that is mostly ASCII with some two-byte characters;
//   - the router's block hashes (`localBlockHashes`) of a 5-token, a 64-token (blocks of 16) and a
//     13,500-token prompt (blocks of 64), per prompt;
//   - an AbortController with its signal, and one `abort` listener added and removed, per controller.
// Usage: node --import tsx bench/token-path-micro.ts
import { ByteTokenizer } from "../src/engines/byte-tokenizer.js";
import { IncrementalDetokenizer } from "../src/frontend/incremental-detokenizer.js";
import { localBlockHashes } from "../src/protocol/index.js";
import { machine } from "./load/processes.js";

/** Median µs per unit of `units` units of `work`, over 5 rounds. */
function measure(units: number, work: () => number): number {
  const rounds: number[] = [];
  let sink = 0;
  for (let r = 0; r < 5; r++) {
    const started = performance.now();
    sink += work();
    rounds.push(((performance.now() - started) * 1000) / units);
  }
  if (sink < 0) console.log(sink); // keeps the work observable
  return [...rounds].sort((a, b) => a - b)[2] as number;
}

const tokenizer = new ByteTokenizer();
const ids = tokenizer.encode("The quick brown fox jumps over the lazy dog, and then — naïve café — it rests. ".repeat(4));
const STREAMS = 20_000;
const detokenizing = measure(STREAMS * 16, () => {
  let chars = 0;
  for (let s = 0; s < STREAMS; s++) {
    const detokenizer = new IncrementalDetokenizer(tokenizer);
    for (let i = 0; i < 16; i++) chars += detokenizer.push([ids[(s + i) % ids.length] as number]).length;
    chars += detokenizer.flush().length;
  }
  return chars;
});

const prompt = (length: number) => Array.from({ length }, (_, i) => (i * 7919) % 32_000);
const hashing = (
  [
    ["5 tokens", prompt(5), 64, 200_000],
    ["64 tokens, blocks of 16", prompt(64), 16, 200_000],
    ["13,500 tokens, blocks of 64", prompt(13_500), 64, 2_000],
  ] as const
).map(([name, tokens, blockSize, count]) => {
  const us = measure(count, () => {
    let blocks = 0;
    for (let i = 0; i < count; i++) blocks += localBlockHashes(tokens, blockSize).length;
    return blocks;
  });
  return [name, us] as const;
});

const CONTROLLERS = 200_000;
const controllers = measure(CONTROLLERS, () => {
  let aborted = 0;
  const listener = (): void => {};
  for (let i = 0; i < CONTROLLERS; i++) {
    const controller = new AbortController();
    controller.signal.addEventListener("abort", listener, { once: true });
    controller.signal.removeEventListener("abort", listener);
    if (controller.signal.aborted) aborted++;
  }
  return aborted;
});

console.log(`A request's small costs — ${machine()} — median of 5 rounds\n`);
console.log("| what | µs |\n|---|---:|");
console.log(`| incremental detokenizer, byte tokenizer, a token | ${detokenizing.toFixed(3)} |`);
for (const [name, us] of hashing) console.log(`| localBlockHashes, ${name} | ${us.toFixed(2)} |`);
console.log(`| AbortController + signal, one listener added and removed | ${controllers.toFixed(2)} |`);
