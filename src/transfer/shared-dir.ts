import { readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdir, realpath, stat, statfs, writeFile } from "node:fs/promises";
import { isAbsolute, join, relative, sep } from "node:path";
import { ArmatureError } from "../protocol/index.js";

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
    if (!Number.isInteger(pid) || pid <= 0 || isProcessAlive(pid)) continue;
    rmSync(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}

/** Whether a process with this pid exists (one owned by another user counts). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The shared folder an agent makes under /dev/shm: `armature-AGENT-PID`. */
export function sharedFolderName(agent: string, pid: number): string {
  return `armature-${agent}-${pid}`;
}

/** Whether `folder` is an agent's shared folder: `armature-AGENT-PID`, or `armature-AGENT` where one was given. */
function isSharedFolderOf(folder: string, agent: string): boolean {
  const prefix = `armature-${agent}`;
  return folder === prefix || (folder.startsWith(`${prefix}-`) && /^[0-9]+$/.test(folder.slice(prefix.length + 1)));
}

/**
 * Checks a file path a peer's descriptor names before this process opens it, and returns the path
 * resolved (symlinks followed) and the file's size. The path arrives on the request plane, so it is
 * taken as hostile: it must be absolute with no `..`, resolve to `parent/armature-AGENT-PID/FILE` (the
 * describing agent's own shared folder, one level down, after symlinks) and be a regular file.
 * Anything else is `TRANSFER_FAILED`; a file that is gone is `TRANSFER_FAILED` as well.
 */
export async function confinedSharedFile(path: string, parent: string, agent: string): Promise<{ path: string; size: number }> {
  const refuse = (why: string, cause?: unknown): ArmatureError =>
    new ArmatureError("TRANSFER_FAILED", `refused to open ${JSON.stringify(path)} for agent ${agent}: ${why}`, { cause });
  if (!isAbsolute(path) || path.split(/[\\/]/).includes("..")) throw refuse("a descriptor path must be absolute, without '..'");
  let resolved: string;
  let root: string;
  try {
    resolved = await realpath(path);
    root = await realpath(parent);
  } catch (cause) {
    throw refuse("it is gone (the owner frees a region's file with the region)", cause);
  }
  const parts = relative(root, resolved).split(sep);
  if (parts.length !== 2 || !isSharedFolderOf(parts[0] ?? "", agent) || parts.includes("..")) {
    throw refuse(`it resolves to ${resolved}, outside the agent's shared folder (${join(root, `armature-${agent}-PID`)})`);
  }
  const info = await stat(resolved).catch((cause: unknown) => {
    throw refuse("it is gone", cause);
  });
  if (!info.isFile()) throw refuse("it is not a regular file");
  return { path: resolved, size: info.size };
}

/** Bytes an unprivileged process may still write on the file system that holds `dir`. */
export async function freeBytes(dir: string): Promise<number> {
  const info = await statfs(dir);
  return info.bavail * info.bsize;
}

/** Whether `name` is a plain file name: no folder part, no `..`, nothing a peer could steer a path with. */
export function isPlainFileName(name: string): boolean {
  return /^[A-Za-z0-9._-]{1,200}$/.test(name) && name !== "." && name !== "..";
}
