import { readFileSync } from "node:fs";
import { ArmatureError } from "../protocol/index.js";

/** Reads a file a flag names (a key, a certificate); a failure names the flag and its environment twin. */
export function readFlagFile(flag: string, path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (cause) {
    const env = `ARMATURE_${flag.toUpperCase().replaceAll("-", "_")}`;
    const reason = (cause as NodeJS.ErrnoException).code ?? "cannot read it";
    throw new ArmatureError("CONFIG_INVALID", `--${flag} (${env}) ${path}: ${reason}`, { cause });
  }
}
