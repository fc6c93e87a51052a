import { execFile } from "node:child_process";
import { existsSync } from "node:fs";

export const PROMTOOL = "/usr/bin/promtool";

/** Whether promtool is here; in CI it must be (npm test's pretest step installs Debian's prometheus package). */
export function havePromtool(): boolean {
  const present = existsSync(PROMTOOL);
  if (!present && process.env.CI) throw new Error("promtool must be installed in CI");
  return present;
}

/**
 * `promtool check metrics` on an exposition text. Passes on exit 0, and on exit 3 when the output
 * holds only lint advice (naming), not errors; otherwise returns the output as the failure.
 */
export function promtoolCheck(text: string): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    const child = execFile(PROMTOOL, ["check", "metrics"], (error, stdout, stderr) => {
      const code = error ? ((error as { code?: number }).code ?? 1) : 0;
      const output = stdout + stderr;
      resolve({ ok: code === 0 || (code === 3 && !/error/i.test(output)), output });
    });
    child.stdin?.end(text);
  });
}
