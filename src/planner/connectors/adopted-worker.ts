import type { WorkerRole } from "../../protocol/index.js";
import { exitWithin, type LocalWorkerExit, type LocalWorkerInfo, type LocalWorkerState } from "./local-worker.js";

export interface AdoptedWorkerOptions {
  readonly name: string;
  readonly role: WorkerRole;
  readonly pid: number;
  /** The instances it registered in discovery. */
  readonly instanceIds: readonly string[];
  /** How often its process is looked for. Default 250 ms. */
  readonly pollMs?: number;
}

/**
 * An `armature worker` process that another planner's local connector started on this machine
 * and that outlived it (a planner killed with SIGKILL cannot stop its workers). The planner that
 * takes over adopts it: it counts in its pool, and it is stopped as a child would be (SIGTERM, it
 * drains; SIGKILL past the deadline), but, not being this process's child, its exit is seen by
 * looking for its pid, and its exit status is not known.
 */
export class AdoptedWorker implements LocalWorkerInfo {
  readonly name: string;
  readonly role: WorkerRole;
  readonly pid: number;
  readonly instanceIds: readonly string[];
  readonly exited: Promise<LocalWorkerExit>;
  #state: LocalWorkerState = "ready";
  #requested = false;
  #killed = false;

  constructor(options: AdoptedWorkerOptions) {
    this.name = options.name;
    this.role = options.role;
    this.pid = options.pid;
    this.instanceIds = options.instanceIds;
    this.exited = new Promise((resolve) => {
      const timer = setInterval(() => {
        if (isRunning(this.pid)) return;
        clearInterval(timer);
        this.#state = "exited";
        resolve({
          name: this.name,
          role: this.role,
          pid: this.pid,
          code: null,
          signal: null,
          requested: this.#requested,
          killed: this.#killed,
        });
      }, options.pollMs ?? 250);
      timer.unref();
    });
  }

  get state(): LocalWorkerState {
    return this.#state;
  }

  /** SIGTERM (it drains and exits), then waits for its pid to go; past `deadlineMs`, SIGKILL. */
  async stop(deadlineMs: number): Promise<LocalWorkerExit> {
    if (this.#state !== "exited" && !this.#requested) {
      this.#requested = true;
      this.#state = "draining";
      signal(this.pid, "SIGTERM");
    }
    return exitWithin(this.exited, deadlineMs, () => this.killNow());
  }

  /** SIGKILL now, without waiting: for an owner that is exiting itself. */
  killNow(): void {
    if (this.#state === "exited") return;
    this.#killed = true;
    signal(this.pid, "SIGKILL");
  }
}

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Gone already: the poll sees it.
  }
}
