import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";

const BIN = fileURLToPath(new URL("../../bin/armature.js", import.meta.url));

/** An `armature serve` child process on a free port. */
export interface ServeProcess {
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything it printed so far. */
  output(): string;
  /** Sends a signal and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `armature serve --port 0 …` and resolves once it prints where it listens. */
export function startServe(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<ServeProcess> {
  return startArmature(["serve", "--port", "0", ...args], env);
}

/**
 * Starts an armature command and resolves once it prints its readiness line: `at http(s)://…/v1`
 * (serve, frontend) or `armature worker …` (worker, whose `url` is then empty).
 */
export async function startArmature(
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
  /** A command prefix to run it under, e.g. `ip netns exec NAME`. */
  wrapper: readonly string[] = [],
): Promise<ServeProcess> {
  const command = [...wrapper, process.execPath, BIN, ...args, "--log-level", "warn"];
  const child = spawn(command[0] as string, command.slice(1), {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    output += d.toString();
  });
  const exited = once(child, "exit");
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`armature ${args[0]} did not start in time:\n${output}`)), 60_000);
    const check = (): void => {
      const match = /at (https?:\/\/\S+)\/v1/.exec(output);
      if (match?.[1] || /^armature (worker|router) \S/m.test(output)) {
        clearTimeout(timer);
        resolve(match?.[1] ?? "");
      }
    };
    child.stdout?.on("data", check);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`armature ${args[0]} exited with ${code}:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    async stop(signal = "SIGTERM") {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      const [code] = await exited;
      return code as number | null;
    },
  };
}
