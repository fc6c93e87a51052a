import { resolve } from "node:path";
import {
  ensureTinyLora,
  ensureTinyModel,
  ensureTinyRanker,
  writeTinyLora,
  writeTinyModel,
  writeTinyRanker,
} from "../engines/index.js";
import { createLogger } from "../observability/index.js";
import { ArmatureError, isArmatureError } from "../protocol/index.js";
import { BENCH_USAGE, benchCommand } from "./bench-command.js";
import { frontendCommand, routerCommand, workerCommand } from "./distributed-commands.js";
import { startEmbeddedDeployment } from "./embedded-deployment.js";
import { HASH_USAGE, hashCommand } from "./hash-command.js";
import { refuseMetricsPort } from "./metrics-endpoint.js";
import { PLANNER_USAGE, plannerCommand } from "./planner-command.js";
import { installLastResortHandlers } from "./process-guards.js";
import { PROFILE_USAGE, profileCommand } from "./profile-command.js";
import { REPLAY_USAGE, replayCommand } from "./replay-command.js";
import { resolveServeOptions, serveUsage } from "./serve-options.js";
import { untilSignal } from "./signals.js";
import { TRACE_USAGE, traceCommand } from "./trace-command.js";
import { upCommand } from "./up-command.js";

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

/** Each command: how to run it, and the usage `--help` prints. */
const commands: Record<string, { run: (argv: readonly string[]) => Promise<number> | number; usage: () => string }> = {
  serve: { run: (argv) => serve(argv), usage: serveUsage },
  worker: {
    run: (argv) => workerCommand(argv, out),
    usage: () => `usage: armature worker --bus nats://H:P --discovery etcd://H:P [serve's engine flags]\n\n${serveUsage()}`,
  },
  frontend: {
    run: (argv) => frontendCommand(argv, out),
    usage: () =>
      `usage: armature frontend --bus nats://H:P --discovery etcd://H:P [serve's HTTP and router flags]\n\n${serveUsage()}`,
  },
  router: {
    run: (argv) => routerCommand(argv, out),
    usage: () =>
      `usage: armature router --bus nats://H:P --discovery etcd://H:P [--block-size B] [--kv-events on|off]\n\nFrontends started with --router remote ask it which worker serves each request.`,
  },
  planner: { run: (argv) => plannerCommand(argv, out), usage: () => PLANNER_USAGE },
  up: { run: (argv) => upCommand(argv, out), usage: () => "usage: armature up CLUSTER.yaml   (see examples/cluster.yaml)" },
  model: { run: (argv) => model(argv), usage: () => MODEL_USAGE },
  replay: { run: (argv) => replayCommand(argv, out, err), usage: () => REPLAY_USAGE },
  bench: { run: (argv) => benchCommand(argv, out, err), usage: () => BENCH_USAGE },
  profile: { run: (argv) => profileCommand(argv, out, err), usage: () => PROFILE_USAGE },
  hash: { run: (argv) => hashCommand(argv, out), usage: () => HASH_USAGE },
  trace: { run: (argv) => traceCommand(argv, out), usage: () => TRACE_USAGE },
};

/** Runs the CLI; returns the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    out(USAGE);
    return name === undefined ? 1 : 0;
  }
  const command = commands[name];
  if (!command) {
    err(`armature: unknown command '${name}'\n\n${USAGE}`);
    return 2;
  }
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

async function serve(argv: readonly string[]): Promise<number> {
  const options = resolveServeOptions(argv);
  refuseMetricsPort("serve", options.metricsPort);
  if (options.frontendProcesses > 1) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      "--frontend-processes is for armature frontend: armature serve keeps its workers in its one process; run the workers with armature worker (or armature up) and the frontends with armature frontend --frontend-processes N on --bus and --discovery",
    );
  }
  const logger = createLogger({ level: options.logLevel });
  const deployment = await startEmbeddedDeployment(options, logger);
  process.stdout.write(
    `armature serving ${deployment.modelNames.length > 1 ? `models ${deployment.modelNames.map((n) => `'${n}'`).join(", ")}` : `model '${deployment.modelName}'`} (${options.engine}, ${describeWorkers(deployment.workers.map((w) => w.card.role))}) at ${deployment.frontend.url}/v1\n`,
  );
  await untilSignal(logger);
  await deployment.close();
  process.stdout.write("armature stopped\n");
  return 0;
}

const MODEL_USAGE = "usage: armature model tiny|tiny-lora|tiny-ranker [--out FILE]";

/**
 * `armature model tiny` writes the generated model; `tiny-lora` its LoRA adapter (see
 * `buildTinyLora`); `tiny-ranker` a ranking model made from it (see `buildTinyRanker`).
 */
async function model(argv: readonly string[]): Promise<number> {
  const [kind, flag, value] = argv;
  const generated =
    kind === "tiny"
      ? { write: writeTinyModel, ensure: ensureTinyModel }
      : kind === "tiny-lora"
        ? { write: writeTinyLora, ensure: ensureTinyLora }
        : kind === "tiny-ranker"
          ? { write: writeTinyRanker, ensure: ensureTinyRanker }
          : undefined;
  if (!generated || (flag !== undefined && !(flag === "--out" && value)) || argv.length > 3) {
    process.stderr.write(`${MODEL_USAGE}\n`);
    return 2;
  }
  if (flag === "--out" && value) {
    const path = resolve(value);
    await generated.write(path);
    process.stdout.write(`${path}\n`);
    return 0;
  }
  process.stdout.write(`${await generated.ensure()}\n`);
  return 0;
}

/** "2 workers", or "1 prefill + 2 decode workers". */
function describeWorkers(roles: readonly string[]): string {
  const count = (role: string): number => roles.filter((r) => r === role).length;
  const plural = roles.length > 1 ? "s" : "";
  if (count("prefill") === 0) return `${roles.length} worker${plural}`;
  return `${count("prefill")} prefill + ${count("decode")} decode worker${plural}`;
}
