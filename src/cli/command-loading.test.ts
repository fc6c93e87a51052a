import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * Runs `script` in a fresh Node process (TypeScript through tsx) that reports on stderr every
 * module that imports node-llama-cpp; returns those reports.
 */
async function llamaImports(script: string): Promise<string[]> {
  const hook = `export async function resolve(specifier, context, next) {
    if (specifier === "node-llama-cpp") process.stderr.write("node-llama-cpp imported by " + context.parentURL + "\\n");
    return next(specifier, context);
  }`;
  const program = `import { register } from "node:module";
register("data:text/javascript," + encodeURIComponent(${JSON.stringify(hook)}));
${script}`;
  const { stderr } = await run(process.execPath, ["--import", "tsx", "--input-type=module", "-e", program], {
    cwd: new URL("../..", import.meta.url),
  });
  return stderr.split("\n").filter((line) => line.startsWith("node-llama-cpp imported by"));
}

test("frontends, routers, planners and replays start without loading llama.cpp's bindings", async () => {
  const commands = ["frontend", "router", "planner", "replay", "bench", "trace", "hash"];
  const imports = await llamaImports(`
const { main } = await import("./src/cli/main.ts");
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = () => true; // the usages
for (const command of ${JSON.stringify(commands)}) if ((await main([command, "--help"])) !== 0) throw new Error(command);
process.stdout.write = write;`);
  assert.deepEqual(imports, []);
});

test("a llama.cpp runtime loads them when it is first asked for (the check above can see them)", async () => {
  const imports = await llamaImports(`
const { llamaBindings } = await import("./src/engines/llamacpp/llama-runtime.ts");
await llamaBindings();`);
  assert.equal(imports.length, 1, imports.join("\n"));
  assert.match(imports[0] as string, /llama-runtime\.ts/);
});
