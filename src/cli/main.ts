import { resolve } from "node:path";
import { ensureTinyModel, writeTinyModel } from "../engines/index.js";
import { createLogger } from "../observability/index.js";
import { isArmatureError } from "../protocol/index.js";
import { BENCH_USAGE, benchCommand } from "./bench-command.js";
import { startEmbeddedDeployment } from "./embedded-deployment.js";
import { HASH_USAGE, hashCommand } from "./hash-command.js";
import { REPLAY_USAGE, replayCommand } from "./replay-command.js";
import { resolveServeOptions, serveUsage } from "./serve-options.js";

const USAGE = `armature — serve large language models with an OpenAI-compatible API

usage:
  armature serve [flags]          frontend + router + workers in one process (--help for flags)
  armature model tiny [--out F]   write the small generated GGUF model (default: into the cache)
  armature replay TRACE.jsonl      replay a Mooncake trace through the router and mocker workers, in virtual time
  armature bench --url U --model M (--concurrency N | --rate R | --trace F)
                                  load an OpenAI-compatible server: TTFT, ITL, throughput, goodput
  armature hash --block-size B --tokens 1,2,… [--lora NAME] [--json]
                                  Dynamo-compatible block hashes of a token list
`;

/** Runs the CLI; returns the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case "serve":
        if (rest.includes("--help") || rest.includes("-h")) {
          process.stdout.write(`${serveUsage()}\n`);
          return 0;
        }
        return await serve(rest);
      case "model":
        return await model(rest);
      case "replay":
        if (rest.includes("--help")) {
          process.stdout.write(`${REPLAY_USAGE}\n`);
          return 0;
        }
        return await replayCommand(
          rest,
          (text) => process.stdout.write(text),
          (text) => process.stderr.write(text),
        );
      case "bench":
        if (rest.includes("--help")) {
          process.stdout.write(`${BENCH_USAGE}\n`);
          return 0;
        }
        return await benchCommand(
          rest,
          (text) => process.stdout.write(text),
          (text) => process.stderr.write(text),
        );
      case "hash":
        if (rest.includes("--help")) {
          process.stdout.write(`${HASH_USAGE}\n`);
          return 0;
        }
        return hashCommand(rest, (text) => process.stdout.write(text));
      case undefined:
      case "help":
      case "--help":
      case "-h":
        process.stdout.write(USAGE);
        return command === undefined ? 1 : 0;
      default:
        process.stderr.write(`armature: unknown command '${command}'\n\n${USAGE}`);
        return 2;
    }
  } catch (error) {
    process.stderr.write(`armature: ${isArmatureError(error) ? error.message : String(error)}\n`);
    return 1;
  }
}

async function serve(argv: readonly string[]): Promise<number> {
  const options = resolveServeOptions(argv);
  const logger = createLogger({ level: options.logLevel });
  const deployment = await startEmbeddedDeployment(options, logger);
  process.stdout.write(
    `armature serving model '${deployment.modelName}' (${options.engine}, ${options.workers} worker${options.workers > 1 ? "s" : ""}) at ${deployment.frontend.url}/v1\n`,
  );
  await new Promise<void>((resolveSignal) => {
    const onSignal = (signal: NodeJS.Signals): void => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      logger.info({ signal, inflight: deployment.frontend.inflightRequests }, "draining");
      resolveSignal();
    };
    process.on("SIGINT", onSignal);
    process.on("SIGTERM", onSignal);
  });
  await deployment.close();
  process.stdout.write("armature stopped\n");
  return 0;
}

async function model(argv: readonly string[]): Promise<number> {
  const [kind, flag, value] = argv;
  if (kind !== "tiny") {
    process.stderr.write("usage: armature model tiny [--out FILE]\n");
    return 2;
  }
  if (flag === "--out" && value) {
    const path = resolve(value);
    await writeTinyModel(path);
    process.stdout.write(`${path}\n`);
    return 0;
  }
  if (flag !== undefined) {
    process.stderr.write("usage: armature model tiny [--out FILE]\n");
    return 2;
  }
  process.stdout.write(`${await ensureTinyModel()}\n`);
  return 0;
}
