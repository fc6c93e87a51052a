import { parseArgs } from "node:util";
import { ArmatureError } from "../protocol/index.js";
import type { TraceRequest } from "../sim/index.js";
import {
  convertAzureTrace,
  LOAD_SHAPE_KINDS,
  type LoadShape,
  type PriorityShare,
  parseSteps,
  type SyntheticRequest,
  writeSyntheticTrace,
} from "../traces/index.js";

/** What `armature trace --help` prints, and what follows the message of a bad flag. */
export const TRACE_USAGE = `usage: armature trace synth --shape sine --min-rate R --max-rate R --period S --duration S --out FILE [content flags]
       armature trace synth --shape step --steps 0:R,T:R,… --duration S --out FILE [content flags]
       armature trace synth --shape burst --base-rate R --burst-rate R --burst-length S --burst-every S --duration S --out FILE
                            [content flags]
         content flags (defaults): [--seed N (1)] [--input-mean TOKENS (3000)] [--output-mean TOKENS (150)]
                            [--length-sigma X (0.5)] [--multi-turn-share P (0)] [--system-blocks N (0)] [--block-size B (512)]
                            [--priority-mix PRIORITY:SHARE,… (none)]
       armature trace convert --from azure IN.csv --out FILE [--system-blocks N (0)] [--block-size B (512)]

Both write Mooncake JSONL (timestamp ms, input_length, output_length, hash_ids), as armature replay and bench read.

synth: arrivals are a Poisson process whose rate (requests/s, t in seconds) follows the shape:
  sine   (min+max)/2 − (max−min)/2 · cos(2πt/period): starts at the minimum, peaks at period/2 (Dynamo's sin_synth)
  step   --steps 0:2,600:10,1200:2 is 2 req/s from 0 s, 10 from 600 s, 2 from 1200 s (the first step at 0)
  burst  --burst-rate during [k·every, k·every + length) for k = 1, 2, …, --base-rate otherwise
  Lengths are lognormal with the given means (σ of the log --length-sigma; 0 gives every request the mean).
  --input-mean counts a request's new prompt tokens: after the --system-blocks shared blocks that open every
  prompt, or, for a request continuing a conversation (--multi-turn-share), after the previous turn's prompt and
  output, whose full blocks its hash ids repeat. The same --seed gives the same file.
convert: Azure LLM inference CSVs (TIMESTAMP,ContextTokens,GeneratedTokens) carry no content, so every request
  gets hash ids of its own (no shared prefixes); --system-blocks N makes the first N full blocks of every prompt
  a shared system prompt. Timestamps count ms from the earliest row.
--priority-mix 0:0.3,10:0.7 gives 30% of requests priority 0 and 70% priority 10 (lower runs earlier), written as
  each line's "priority"; armature replay queues by it and reports each class apart.`;

const CONTENT_FLAGS = [
  "seed",
  "input-mean",
  "output-mean",
  "length-sigma",
  "multi-turn-share",
  "system-blocks",
  "block-size",
  "priority-mix",
];
const SHAPE_FLAGS: Record<LoadShape["kind"], readonly string[]> = {
  sine: ["min-rate", "max-rate", "period"],
  step: ["steps"],
  burst: ["base-rate", "burst-rate", "burst-length", "burst-every"],
};
const stringFlags = (names: readonly string[]) =>
  Object.fromEntries(names.map((name) => [name, { type: "string" as const }])) as Record<string, { type: "string" }>;

/** `armature trace synth|convert`: writes Mooncake traces for planner and router experiments. */
export async function traceCommand(argv: readonly string[], out: (t: string) => void): Promise<number> {
  const [subcommand, ...rest] = argv;
  if (subcommand === "synth") return synth(rest, out);
  if (subcommand === "convert") return convert(rest, out);
  throw new ArmatureError("CONFIG_INVALID", `armature trace takes synth or convert, got '${subcommand ?? ""}'\n${TRACE_USAGE}`);
}

async function synth(argv: readonly string[], out: (t: string) => void): Promise<number> {
  const flags = ["shape", "duration", "out", ...CONTENT_FLAGS, ...Object.values(SHAPE_FLAGS).flat()];
  const { values } = parse(argv, flags, false);
  const shapeName = values.shape;
  if (!LOAD_SHAPE_KINDS.includes(shapeName as LoadShape["kind"])) {
    throw usageError("--shape", `--shape takes ${LOAD_SHAPE_KINDS.join(", ")}, got '${shapeName ?? ""}'`);
  }
  const kind = shapeName as LoadShape["kind"];
  for (const [other, names] of Object.entries(SHAPE_FLAGS)) {
    for (const name of names) {
      if (other !== kind && values[name] !== undefined)
        throw usageError(`--${name}`, `--${name} applies to --shape ${other} only`);
      if (other === kind && values[name] === undefined) throw usageError(`--${name}`, `--shape ${kind} needs --${name}`);
    }
  }
  const number = (name: string): number | undefined => parseNumber(name, values[name]);
  const required = (name: string): number => number(name) as number;
  const shape: LoadShape =
    kind === "sine"
      ? { kind, minRps: required("min-rate"), maxRps: required("max-rate"), periodSeconds: required("period") }
      : kind === "step"
        ? { kind, steps: parseSteps(values.steps ?? "") }
        : {
            kind,
            baseRps: required("base-rate"),
            burstRps: required("burst-rate"),
            burstLengthSeconds: required("burst-length"),
            burstEverySeconds: required("burst-every"),
          };
  if (values.duration === undefined) throw usageError("--duration", "--duration (seconds) is required");
  const path = requireOut(values.out);
  const requests = await writeSyntheticTrace(path, {
    shape,
    durationSeconds: required("duration"),
    seed: number("seed"),
    inputMeanTokens: number("input-mean"),
    outputMeanTokens: number("output-mean"),
    lengthSigma: number("length-sigma"),
    multiTurnShare: number("multi-turn-share"),
    systemBlocks: number("system-blocks"),
    blockSize: number("block-size"),
    priorityMix: values["priority-mix"] === undefined ? undefined : parsePriorityMix(values["priority-mix"]),
  });
  const continuing = requests.filter((r: SyntheticRequest) => r.parentIndex !== undefined).length;
  const rate = requests.length / required("duration");
  out(`${describe(requests, path)}; ${rate.toFixed(2)} req/s on average, ${continuing} continuing a conversation\n`);
  return 0;
}

async function convert(argv: readonly string[], out: (t: string) => void): Promise<number> {
  const { values, positionals } = parse(argv, ["from", "out", "system-blocks", "block-size"], true);
  if (values.from !== "azure") throw usageError("--from", `--from takes azure, got '${values.from ?? ""}'`);
  const [input, ...extra] = positionals;
  if (input === undefined || extra.length > 0) throw usageError(undefined, "convert takes one input file: --from azure IN.csv");
  const path = requireOut(values.out);
  const requests = await convertAzureTrace(input, path, {
    systemBlocks: parseNumber("system-blocks", values["system-blocks"]),
    blockSize: parseNumber("block-size", values["block-size"]),
  });
  out(`${describe(requests, path)}\n`);
  return 0;
}

function parse(argv: readonly string[], flags: readonly string[], allowPositionals: boolean) {
  try {
    return parseArgs({ args: [...argv], options: stringFlags(flags), allowPositionals, strict: true });
  } catch (cause) {
    throw new ArmatureError("CONFIG_INVALID", `${(cause as Error).message}\n${TRACE_USAGE}`, { cause });
  }
}

/** `0:0.3,10:0.7` → priority 0 for 30% of requests, 10 for 70%. */
function parsePriorityMix(text: string): PriorityShare[] {
  return text.split(",").map((part) => {
    const [priority, share, ...rest] = part.split(":");
    const p = Number(priority);
    const s = Number(share);
    if (
      rest.length > 0 ||
      priority?.trim() === "" ||
      share === undefined ||
      share.trim() === "" ||
      !Number.isFinite(p) ||
      !Number.isFinite(s)
    ) {
      throw usageError("--priority-mix", `--priority-mix takes PRIORITY:SHARE,… (e.g. 0:0.3,10:0.7), got '${part}'`);
    }
    return { priority: p, share: s };
  });
}

function parseNumber(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (text.trim() === "" || !Number.isFinite(value)) throw usageError(`--${name}`, `--${name} must be a number, got '${text}'`);
  return value;
}

function requireOut(path: string | undefined): string {
  if (path === undefined || path === "") throw usageError("--out", "--out FILE (where to write the JSONL) is required");
  return path;
}

function usageError(flag: string | undefined, text: string): ArmatureError {
  return new ArmatureError("CONFIG_INVALID", `${text}\n${TRACE_USAGE}`, { param: flag });
}

function describe(requests: readonly TraceRequest[], path: string): string {
  const mean = (pick: (r: TraceRequest) => number): string =>
    (requests.reduce((sum, r) => sum + pick(r), 0) / Math.max(1, requests.length)).toFixed(0);
  const spanSeconds = (requests.at(-1)?.timestamp ?? 0) / 1000;
  return `wrote ${requests.length} requests to ${path}: last arrival at ${spanSeconds.toFixed(1)} s, mean input ${mean((r) => r.inputLength)} / output ${mean((r) => r.outputLength)} tokens`;
}
