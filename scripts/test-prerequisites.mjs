#!/usr/bin/env node
// `npm test`'s pretest step: the integration and end-to-end tests start real nats-server, etcd,
// promtool and prometheus, and a headless chromium, from Debian's packages, at the paths test/helpers
// looks in. When one is missing, install it where we can (root with apt-get); otherwise stop with the
// one command that fixes it. Then it builds llama.cpp's own llama-server (scripts/build-llama-server.mjs)
// with cmake and g++, which the engine-server tests drive: minutes the first time, cached after.
// Silent and quick when everything is there.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

/** Each tool the tests run, where test/helpers looks for it, and the Debian package that ships it. */
const TOOLS = [
  { name: "nats-server", paths: ["/usr/sbin/nats-server", "/usr/bin/nats-server"], aptPackage: "nats-server" },
  { name: "etcd", paths: ["/usr/bin/etcd", "/usr/sbin/etcd"], aptPackage: "etcd-server" },
  { name: "promtool", paths: ["/usr/bin/promtool"], aptPackage: "prometheus" },
  { name: "prometheus", paths: ["/usr/bin/prometheus"], aptPackage: "prometheus" },
  { name: "chromium", paths: ["/usr/bin/chromium"], aptPackage: "chromium" },
  { name: "cmake", paths: ["/usr/bin/cmake"], aptPackage: "cmake" },
  { name: "g++", paths: ["/usr/bin/g++"], aptPackage: "g++" },
];

const missingPackages = () => [...new Set(TOOLS.filter((t) => !t.paths.some((p) => existsSync(p))).map((t) => t.aptPackage))];

function fail(packages, why) {
  const tools = TOOLS.filter((t) => packages.includes(t.aptPackage)).map((t) => t.name);
  const command = `apt-get install ${packages.join(" ")}`;
  process.stderr.write(`npm test needs ${tools.join(", ")}${why}: run \`${command}\` as root, then npm test again\n`);
  process.exit(1);
}

/** Runs apt-get quietly: its messages are shown only when it fails. */
function apt(args) {
  const result = spawnSync("apt-get", args, {
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
  });
  if (result.status !== 0) process.stderr.write(result.stderr);
  return result.status === 0;
}

const missing = missingPackages();
if (missing.length > 0) {
  const isRoot = process.getuid?.() === 0;
  const hasApt = spawnSync("apt-get", ["--version"], { stdio: "ignore" }).status === 0;
  if (!isRoot || !hasApt) fail(missing, "");
  process.stderr.write(`installing ${missing.join(" ")} (apt-get) for the integration tests\n`);
  const installed = apt(["update", "-qq"]) && apt(["install", "-y", "-qq", "--no-install-recommends", ...missing]);
  const stillMissing = missingPackages();
  if (stillMissing.length > 0) fail(stillMissing, installed ? "" : " (apt-get failed)");
}

const build = spawnSync(process.execPath, [new URL("./build-llama-server.mjs", import.meta.url).pathname], { stdio: "inherit" });
if (build.status !== 0) process.exit(build.status ?? 1);
