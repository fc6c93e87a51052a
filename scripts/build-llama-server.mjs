#!/usr/bin/env node
// Builds llama.cpp's own `llama-server` from the llama.cpp source that node-llama-cpp ships
// (node_modules/node-llama-cpp/llama/gitRelease.bundle, a git bundle), with Debian's cmake and g++,
// into ~/.cache/armature/llama-server/<commit>/llama-server (ARMATURE_CACHE_DIR moves the cache).
// The tests drive it as an unmodified engine server behind `--engine llama-server`, and the
// benchmarks compare armature with it. Quick when the binary for this commit is there already; the
// first build takes minutes (docs/engines.md gives the time measured).
// Usage: node scripts/build-llama-server.mjs [--print-path]
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { availableParallelism, homedir, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const bundle = join(root, "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle");

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { encoding: "utf8", maxBuffer: 1 << 28, ...options });
  if (result.error || result.status !== 0) {
    const output = `${result.stdout ?? ""}${result.stderr ?? ""}`.split("\n").slice(-40).join("\n");
    process.stderr.write(`llama-server build: ${command} ${args.join(" ")} failed\n${output}\n${result.error?.message ?? ""}\n`);
    process.exit(1);
  }
  return result.stdout;
}

if (!existsSync(bundle)) {
  process.stderr.write(`llama-server build: ${bundle} is missing; run npm ci first\n`);
  process.exit(1);
}
const commit = run("git", ["bundle", "list-heads", bundle]).trim().split(/\s+/)[0];
const cacheDir = process.env.ARMATURE_CACHE_DIR ?? join(homedir(), ".cache", "armature");
const target = join(cacheDir, "llama-server", commit, "llama-server");

if (process.argv.includes("--print-path")) {
  process.stdout.write(`${target}\n`);
  process.exit(0);
}
if (existsSync(target)) process.exit(0);

for (const tool of ["git", "cmake", "g++"]) {
  if (spawnSync(tool, ["--version"], { stdio: "ignore" }).status !== 0) {
    process.stderr.write(`llama-server build: ${tool} is missing: run \`apt-get install cmake g++ git\` as root\n`);
    process.exit(1);
  }
}
const started = Date.now();
const work = mkdtempSync(join(tmpdir(), "armature-llama-server-"));
process.stderr.write(`building llama-server ${commit.slice(0, 12)} from node-llama-cpp's llama.cpp source (minutes, once)\n`);
try {
  const source = join(work, "llama.cpp");
  run("git", ["clone", "--quiet", bundle, source]);
  run("git", ["-C", source, "checkout", "--quiet", commit]);
  const build = join(work, "build");
  run("cmake", [
    "-S",
    source,
    "-B",
    build,
    "-DCMAKE_BUILD_TYPE=Release",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
  ]);
  run("cmake", ["--build", build, "--target", "llama-server", "--parallel", String(availableParallelism())]);
  mkdirSync(dirname(target), { recursive: true });
  // Copied under another name, then renamed: a build cut off half-way leaves no binary that looks done.
  cpSync(join(build, "bin", "llama-server"), `${target}.partial`);
  run("mv", [`${target}.partial`, target]);
} finally {
  rmSync(work, { recursive: true, force: true });
}
process.stderr.write(`built ${target} in ${Math.round((Date.now() - started) / 1000)} s\n`);
