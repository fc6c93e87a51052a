import { writeFile } from "node:fs/promises";
import { basename, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  type Engine,
  ensureTinyModel,
  LlamaCppEngine,
  loadTimingProfile,
  MockerEngine,
  profiledTimingModel,
} from "../engines/index.js";
import {
  compileSweepOptions,
  describeSweepProgress,
  formatProfileJson,
  type ProfileSweepOptions,
  renderProfileChart,
  runProfileSweep,
} from "../profiler/index.js";
import { ArmatureError } from "../protocol/index.js";
import { type Clock, RealClock, VirtualClock } from "../runtime/index.js";

export const PROFILE_USAGE = `usage: armature profile --engine mocker|llamacpp --out PROFILE.json [--svg CHART.svg]
       [--input-lengths 64,128,…] [--concurrency 1,2,4,…] [--context-lengths 128,256,…]
       [--requests-per-point N] [--output-tokens N] [--seed N]
       engine flags: --model GGUF --sequences N --context-size N --block-size N   (llamacpp)
                     --context-size N --block-size N --kv-blocks N --speedup-ratio R --timing-profile F   (mocker)

Measures one worker's engine directly (no HTTP, no router) and writes the worker profile the
planner reads (docs/planner.md): TTFT and prefill tokens/s by input length (median of
--requests-per-point runs, default 3), and ITL, output tokens/s and KV usage for each concurrency ×
context length (a batch started at once, --output-tokens each, default 64). The mocker runs in
virtual time: its modelled step times, divided by --speedup-ratio as when serving (default 1), with
no waiting. Default lengths and concurrencies double up to what the engine holds.`;

const PROFILE_FLAGS = [
  "engine",
  "out",
  "svg",
  "input-lengths",
  "concurrency",
  "context-lengths",
  "requests-per-point",
  "output-tokens",
  "seed",
  "model",
  "sequences",
  "context-size",
  "block-size",
  "kv-blocks",
  "speedup-ratio",
  "timing-profile",
] as const;

/** The flags of `armature profile` that pick and size the engine. */
interface EngineFlags {
  readonly engine: "mocker" | "llamacpp";
  readonly model: string | undefined;
  readonly sequences: number | undefined;
  readonly contextSize: number | undefined;
  readonly blockSize: number | undefined;
  readonly kvBlocks: number | undefined;
  readonly speedupRatio: number | undefined;
  readonly timingProfile: string | undefined;
}

/**
 * `armature profile`: sweeps one engine and writes its profile (`--out`) and, with `--svg`, a chart.
 * Progress lines go to `err`, the paths written to `out`. Bad flags throw `CONFIG_INVALID` naming
 * the flag: malformed values before the engine starts, lengths and batches it cannot hold right after.
 */
export async function profileCommand(
  argv: readonly string[],
  out: (t: string) => void,
  err: (t: string) => void,
): Promise<number> {
  const { flags, sweep, outPath, svgPath } = resolveProfileFlags(argv);
  const { engine, clock, description } = await createProfiledEngine(flags);
  const stop = new AbortController();
  const onSigint = (): void => stop.abort();
  process.once("SIGINT", onSigint);
  try {
    const compiled = compileSweepOptions(engine.info, sweep);
    err(`profiling ${description}\n`);
    if (clock instanceof VirtualClock) err("times are the mocker's modelled step times, in virtual time (no waiting)\n");
    const document = await runProfileSweep(engine, {
      ...sweep,
      clock,
      signal: stop.signal,
      description: `armature profile: ${description}; TTFT the median of ${compiled.requestsPerPoint} runs, decode batches of ${compiled.outputTokens} output tokens (context = prompt + output/2); ${new Date().toISOString()}`,
      onProgress: (progress) => err(`${describeSweepProgress(progress)}\n`),
    });
    const { text } = formatProfileJson(document, outPath);
    await writeFile(outPath, text);
    out(`profile: ${outPath}\n`);
    if (svgPath) {
      await writeFile(svgPath, `${renderProfileChart(document, `worker profile: ${description}`)}\n`);
      out(`chart: ${svgPath}\n`);
    }
    return 0;
  } finally {
    process.removeListener("SIGINT", onSigint);
    await engine.close();
  }
}

/** The flags of `armature profile`, checked: `CONFIG_INVALID` naming the flag, with the usage. */
function resolveProfileFlags(argv: readonly string[]): {
  flags: EngineFlags;
  sweep: ProfileSweepOptions;
  outPath: string;
  svgPath: string | undefined;
} {
  const values = parseProfileFlags(argv);
  const fail = (message: string): never => {
    throw new ArmatureError("CONFIG_INVALID", `${message}\n${PROFILE_USAGE}`);
  };
  if (values.engine !== "mocker" && values.engine !== "llamacpp") {
    fail(`--engine must be mocker or llamacpp, got ${values.engine === undefined ? "nothing" : `'${values.engine}'`}`);
  }
  if (!values.out) fail("--out is required: the file the profile is written to");
  const count = (flag: string, value: string | undefined): number | undefined => {
    if (value === undefined) return undefined;
    const n = Number(value);
    if (value.trim() === "" || !Number.isInteger(n) || n < 1) fail(`--${flag} must be a whole number above 0, got '${value}'`);
    return n;
  };
  const list = (flag: string, value: string | undefined): number[] | undefined =>
    value?.split(",").map((item) => count(flag, item.trim()) as number);
  const ratio = values["speedup-ratio"] === undefined ? undefined : Number(values["speedup-ratio"]);
  if (ratio !== undefined && !(Number.isFinite(ratio) && ratio > 0)) {
    fail(`--speedup-ratio must be a number above 0, got '${values["speedup-ratio"]}'`);
  }
  const flags: EngineFlags = {
    engine: values.engine as EngineFlags["engine"],
    model: values.model,
    sequences: count("sequences", values.sequences),
    contextSize: count("context-size", values["context-size"]),
    blockSize: count("block-size", values["block-size"]),
    kvBlocks: count("kv-blocks", values["kv-blocks"]),
    speedupRatio: ratio,
    timingProfile: values["timing-profile"],
  };
  const misplaced =
    flags.engine === "mocker"
      ? ([
          ["model", flags.model],
          ["sequences", flags.sequences],
        ] as const)
      : ([
          ["kv-blocks", flags.kvBlocks],
          ["speedup-ratio", flags.speedupRatio],
          ["timing-profile", flags.timingProfile],
        ] as const);
  for (const [flag, value] of misplaced) {
    if (value !== undefined) fail(`--${flag} is not a flag of --engine ${flags.engine}`);
  }
  const sweep: ProfileSweepOptions = {
    inputLengths: list("input-lengths", values["input-lengths"]),
    concurrency: list("concurrency", values.concurrency),
    contextLengths: list("context-lengths", values["context-lengths"]),
    requestsPerPoint: count("requests-per-point", values["requests-per-point"]),
    outputTokens: count("output-tokens", values["output-tokens"]),
    seed: count("seed", values.seed),
  };
  return {
    flags,
    sweep,
    outPath: resolve(values.out as string),
    svgPath: values.svg === undefined ? undefined : resolve(values.svg),
  };
}

/** The flags as strings; node's messages for unknown or malformed flags (which name them) become `CONFIG_INVALID`. */
function parseProfileFlags(argv: readonly string[]): Partial<Record<string, string>> {
  const string = { type: "string" } as const;
  try {
    return parseArgs({
      args: [...argv],
      options: Object.fromEntries(PROFILE_FLAGS.map((flag) => [flag, string])),
      strict: true,
    }).values as Partial<Record<string, string>>;
  } catch (cause) {
    throw new ArmatureError("CONFIG_INVALID", `${(cause as Error).message}\n${PROFILE_USAGE}`, { cause });
  }
}

/** Starts the engine the flags describe, the clock to time it with, and a line that says what it is. */
async function createProfiledEngine(flags: EngineFlags): Promise<{ engine: Engine; clock: Clock; description: string }> {
  if (flags.engine === "llamacpp") {
    const modelPath = flags.model ?? (await ensureTinyModel());
    const engine = await LlamaCppEngine.create({
      modelPath,
      sequences: flags.sequences ?? 4,
      contextSizePerSequence: flags.contextSize ?? 2048,
      ...(flags.blockSize ? { blockSize: flags.blockSize } : {}),
    });
    const { maxSequences, contextLength, backend, threads } = engine.info;
    return {
      engine,
      clock: new RealClock(),
      description: `llamacpp ${basename(modelPath)} on ${backend} (${threads} threads), ${maxSequences} sequences of ${contextLength} tokens, real time`,
    };
  }
  const speedupRatio = flags.speedupRatio ?? 1;
  const timing = flags.timingProfile
    ? profiledTimingModel(await loadTimingProfile(flags.timingProfile), speedupRatio)
    : undefined;
  const clock = new VirtualClock();
  const engine = new MockerEngine({
    clock,
    speedupRatio,
    ...(timing ? { timing } : {}),
    ...(flags.contextSize ? { contextLength: flags.contextSize } : {}),
    ...(flags.blockSize ? { blockSize: flags.blockSize } : {}),
    ...(flags.kvBlocks ? { kvBlocks: flags.kvBlocks } : {}),
  });
  const model = flags.timingProfile ? `timing profile ${basename(flags.timingProfile)}` : "polynomial timing model";
  const { totalKvBlocks, blockSize } = engine.info;
  return {
    engine,
    clock,
    description: `mocker (${model}, --speedup-ratio ${speedupRatio}, ${totalKvBlocks} KV blocks of ${blockSize} tokens), virtual time`,
  };
}
