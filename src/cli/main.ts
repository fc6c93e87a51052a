import { createLogger } from "../observability/index.js";
import { isArmatureError } from "../protocol/index.js";
import { installLastResortHandlers } from "./process-guards.js";

const USAGE = `armature — serve large language models with an OpenAI-compatible API

usage:
  armature serve [flags]          frontend + router + workers in one process (--help for flags)
  armature worker --bus nats://… --discovery etcd://…     engines as a separate process
  armature frontend --bus nats://… --discovery etcd://…   HTTP API and router as a separate process
  armature router --bus nats://… --discovery etcd://…     the KV router as a service (frontends: --router remote)
  armature planner --bus nats://… --discovery etcd://… [-- WORKER FLAGS]   the planner: scales workers from frontends' traffic
  armature up CLUSTER.yaml         a local deployment (nats, etcd, workers, frontend) as child processes
  armature model tiny [--out F]   write the small generated GGUF model (default: into the cache)
  armature model tiny-lora [--out F]   a LoRA adapter for it: its greedy output is "sea sea …"
  armature model tiny-ranker [--out F] a ranking model (reranker) made from it, for /v1/rerank
  armature replay TRACE.jsonl      replay a Mooncake trace through the router and mocker workers, in virtual time
  armature bench --url U --model M (--concurrency N | --rate R | --trace F)
                                  load an OpenAI-compatible server: TTFT, ITL, throughput, goodput
  armature profile --engine mocker|llamacpp --out F [--svg C]
                                  measure one engine directly: the worker profile the planner reads
  armature hash --block-size B --tokens 1,2,… [--lora NAME] [--json]
                                  Dynamo-compatible block hashes of a token list
  armature trace synth|convert …  write Mooncake traces: sine/step/burst load shapes, or from Azure's CSVs
`;

const out = (text: string): void => {
  process.stdout.write(text);
};
const err = (text: string): void => {
  process.stderr.write(text);
};

interface Command {
  run(argv: readonly string[]): Promise<number> | number;
  /** The usage `--help` prints. */
  usage(): string;
}

/**
 * Each command, loaded when it is asked for: a command imports only what it runs (a frontend or a
 * replay never loads llama.cpp's bindings, which only workers and the tokenizers of GGUF models need).
 */
const commands: Record<string, () => Promise<Command>> = {
  serve: async () => {
    const [{ serveCommand }, { serveUsage }] = await Promise.all([import("./serve-command.js"), import("./serve-options.js")]);
    return { run: serveCommand, usage: serveUsage };
  },
  worker: async () => {
    const [{ workerCommand }, { serveUsage }] = await Promise.all([
      import("./distributed-commands.js"),
      import("./serve-options.js"),
    ]);
    return {
      run: (argv) => workerCommand(argv, out),
      usage: () => `usage: armature worker --bus nats://H:P --discovery etcd://H:P [serve's engine flags]\n\n${serveUsage()}`,
    };
  },
  frontend: async () => {
    const [{ frontendCommand }, { serveUsage }] = await Promise.all([
      import("./distributed-commands.js"),
      import("./serve-options.js"),
    ]);
    return {
      run: (argv) => frontendCommand(argv, out),
      usage: () =>
        `usage: armature frontend --bus nats://H:P --discovery etcd://H:P [serve's HTTP and router flags]\n\n${serveUsage()}`,
    };
  },
  router: async () => {
    const { routerCommand } = await import("./distributed-commands.js");
    return {
      run: (argv) => routerCommand(argv, out),
      usage: () =>
        `usage: armature router --bus nats://H:P --discovery etcd://H:P [--block-size B] [--kv-events on|off]\n\nFrontends started with --router remote ask it which worker serves each request.`,
    };
  },
  planner: async () => {
    const { PLANNER_USAGE, plannerCommand } = await import("./planner-command.js");
    return { run: (argv) => plannerCommand(argv, out), usage: () => PLANNER_USAGE };
  },
  up: async () => {
    const { upCommand } = await import("./up-command.js");
    return { run: (argv) => upCommand(argv, out), usage: () => "usage: armature up CLUSTER.yaml   (see examples/cluster.yaml)" };
  },
  model: async () => {
    const { MODEL_USAGE, modelCommand } = await import("./model-command.js");
    return { run: modelCommand, usage: () => MODEL_USAGE };
  },
  replay: async () => {
    const { REPLAY_USAGE, replayCommand } = await import("./replay-command.js");
    return { run: (argv) => replayCommand(argv, out, err), usage: () => REPLAY_USAGE };
  },
  bench: async () => {
    const { BENCH_USAGE, benchCommand } = await import("./bench-command.js");
    return { run: (argv) => benchCommand(argv, out, err), usage: () => BENCH_USAGE };
  },
  profile: async () => {
    const { PROFILE_USAGE, profileCommand } = await import("./profile-command.js");
    return { run: (argv) => profileCommand(argv, out, err), usage: () => PROFILE_USAGE };
  },
  hash: async () => {
    const { HASH_USAGE, hashCommand } = await import("./hash-command.js");
    return { run: (argv) => hashCommand(argv, out), usage: () => HASH_USAGE };
  },
  trace: async () => {
    const { TRACE_USAGE, traceCommand } = await import("./trace-command.js");
    return { run: (argv) => traceCommand(argv, out), usage: () => TRACE_USAGE };
  },
};

/** Runs the CLI; returns the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    out(USAGE);
    return name === undefined ? 1 : 0;
  }
  const load = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!load) {
    err(`armature: unknown command '${name}'\n\n${USAGE}`);
    return 2;
  }
  const command = await load();
  if (rest.includes("--help") || rest.includes("-h")) {
    out(`${command.usage()}\n`);
    return 0;
  }
  // Serving processes log what nothing caught and keep serving; one-shot commands fail loudly.
  const removeGuards = ["serve", "worker", "frontend", "router"].includes(name)
    ? installLastResortHandlers(createLogger())
    : undefined;
  try {
    return await command.run(rest);
  } catch (error) {
    err(`armature: ${isArmatureError(error) ? error.message : String(error)}\n`);
    return 1;
  } finally {
    removeGuards?.();
  }
}
