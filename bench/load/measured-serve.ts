// Runs `armature serve ARGS` in this process (started with --expose-gc and an IPC channel) and
// answers each "memory" message with process.memoryUsage() taken after a full collection, so a
// benchmark reads the server's live heap, not only its resident set.
import { main } from "../../src/cli/main.js";

process.on("message", (message) => {
  if (message !== "memory") return;
  globalThis.gc?.();
  process.send?.(process.memoryUsage());
});
const code = await main(["serve", ...process.argv.slice(2)]);
process.disconnect?.();
process.exitCode = code;
