import { readFileSync } from "node:fs";
import { hostname } from "node:os";

/** Identifies this host (and its /dev/shm): the hostname and the kernel's boot id. */
export function localHostId(): string {
  let boot = "";
  try {
    boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    // Not Linux: the hostname alone.
  }
  return `${hostname()}/${boot}`;
}
