import { type ChildProcess, spawn } from "node:child_process";
import { hostname } from "node:os";
import { createInterface } from "node:readline";
import type { WorkerRole } from "../../protocol/index.js";
import type { PlannerWorkerOrigin } from "../../runtime/index.js";

/**
 * Set in the environment of every worker the local connector starts: such a worker registers
 * where it runs (`InstanceRecord.startedBy`), so a planner that takes over can adopt it.
 */
export const PLANNER_WORKER_ENV = "ARMATURE_PLANNER_WORKER";

/** This process's host and pid when a local connector started it, else undefined. */
export function plannerWorkerOrigin(env: NodeJS.ProcessEnv = process.env): PlannerWorkerOrigin | undefined {
  return env[PLANNER_WORKER_ENV] === "1" ? { host: hostname(), pid: process.pid } : undefined;
}

/** `armature worker` prints this once its engines are registered in discovery and serving. */
const READY_LINE = /^armature worker (\S+(?:, \S+)*) serving /;

export type LocalWorkerState = "starting" | "ready" | "draining" | "exited";

/** A worker process as the local connector sees it. */
export interface LocalWorkerInfo {
  /** `ROLE-N`, unique within the connector. */
  readonly name: string;
  readonly role: WorkerRole;
  readonly pid: number | undefined;
  readonly state: LocalWorkerState;
  /** The instance ids it registered in discovery (from its ready line); empty before. */
  readonly instanceIds: readonly string[];
}

/** How a worker process ended. */
export interface LocalWorkerExit {
  readonly name: string;
  readonly role: WorkerRole;
  readonly pid: number | undefined;
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** It was told to stop (scale-down or close), rather than exiting by itself. */
  readonly requested: boolean;
  /** It did not finish draining within the deadline and was killed with SIGKILL. */
  readonly killed: boolean;
}

export interface LocalWorkerSpawn {
  readonly name: string;
  readonly role: WorkerRole;
  readonly command: string;
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly onLine: (line: string, worker: LocalWorkerInfo) => void;
}

/**
 * One `armature worker` child process. It runs in its own process group, so a Ctrl-C at the
 * terminal reaches only its owner, which then stops it in order (a worker that got the terminal's
 * SIGINT and then its owner's SIGTERM would take the second signal as "exit now").
 */
export class LocalWorker implements LocalWorkerInfo {
  readonly name: string;
  readonly role: WorkerRole;
  readonly exited: Promise<LocalWorkerExit>;
  #state: LocalWorkerState = "starting";
  #instanceIds: readonly string[] = [];
  #requested = false;
  #killed = false;
  readonly #child: ChildProcess;

  constructor(options: LocalWorkerSpawn) {
    this.name = options.name;
    this.role = options.role;
    this.#child = spawn(options.command, options.args, {
      env: { ...options.env, [PLANNER_WORKER_ENV]: "1" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    for (const stream of [this.#child.stdout, this.#child.stderr]) {
      if (!stream) continue;
      createInterface({ input: stream }).on("line", (line) => {
        const ready = stream === this.#child.stdout ? READY_LINE.exec(line) : null;
        if (ready?.[1] && this.#state === "starting") {
          this.#instanceIds = ready[1].split(", ");
          this.#state = "ready";
        }
        options.onLine(line, this);
      });
    }
    this.exited = new Promise((resolve) => {
      const finish = (code: number | null, signal: NodeJS.Signals | null): void => {
        this.#state = "exited";
        resolve({
          name: this.name,
          role: this.role,
          pid: this.pid,
          code,
          signal,
          requested: this.#requested,
          killed: this.#killed,
        });
      };
      this.#child.once("exit", finish);
      // A command that cannot start at all (ENOENT) ends here, without an exit event.
      this.#child.once("error", () => {
        if (this.#child.exitCode === null && this.#child.signalCode === null) finish(null, null);
      });
    });
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get state(): LocalWorkerState {
    return this.#state;
  }

  get instanceIds(): readonly string[] {
    return this.#instanceIds;
  }

  /**
   * Sends SIGTERM (the worker drains: it stops taking requests, finishes the ones it has,
   * deregisters and exits 0) and waits for the exit; past `deadlineMs` it sends SIGKILL.
   */
  async stop(deadlineMs: number): Promise<LocalWorkerExit> {
    if (this.#state !== "exited" && !this.#requested) {
      this.#requested = true;
      this.#state = "draining";
      this.#child.kill("SIGTERM");
    }
    return exitWithin(this.exited, deadlineMs, () => this.killNow());
  }

  /** SIGKILL now, without waiting: for an owner that is exiting itself. */
  killNow(): void {
    if (this.#state === "exited") return;
    this.#killed = true;
    this.#child.kill("SIGKILL");
  }
}

/** Waits for `exited`; past `deadlineMs`, calls `kill` (SIGKILL) and waits on. */
export async function exitWithin(
  exited: Promise<LocalWorkerExit>,
  deadlineMs: number,
  kill: () => void,
): Promise<LocalWorkerExit> {
  const timer = setTimeout(kill, deadlineMs);
  try {
    return await exited;
  } finally {
    clearTimeout(timer);
  }
}
