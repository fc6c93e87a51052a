import { readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

const OWNER_FILE = ".owner-pid";

/** Creates an agent's shared folder and records which process owns it. */
export async function createSharedDir(path: string): Promise<void> {
  await mkdir(path, { recursive: true });
  await writeFile(join(path, OWNER_FILE), String(process.pid));
}

/**
 * Removes the shared folders (`armature-*` under `parent`) of agents whose process died without
 * closing them (SIGKILL, a crash), so their exported KV does not stay in /dev/shm. Returns what it removed.
 */
export function sweepDeadSharedDirs(parent: string): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(parent).filter((n) => n.startsWith("armature-"));
  } catch {
    return removed;
  }
  for (const name of names) {
    const dir = join(parent, name);
    let pid: number;
    try {
      pid = Number(readFileSync(join(dir, OWNER_FILE), "utf8"));
    } catch {
      continue; // Not an agent folder, or one being created now.
    }
    if (!Number.isInteger(pid) || pid <= 0 || alive(pid)) continue;
    rmSync(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
