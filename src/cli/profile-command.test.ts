import assert from "node:assert/strict";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { commandOutput } from "../../test/helpers/command-output.js";
import { polynomialTimingModel } from "../engines/index.js";
import { parseProfile } from "../planner/index.js";
import { profileCommand } from "./profile-command.js";

const run = (argv: readonly string[]) => commandOutput(profileCommand, argv);

test("armature profile --engine mocker writes a profile the planner reads and a chart", async () => {
  const folder = await mkdtemp(join(tmpdir(), "armature-profile-cli-"));
  const profilePath = join(folder, "worker.json");
  const chartPath = join(folder, "worker.svg");
  const { code, out, err } = await run([
    "--engine",
    "mocker",
    "--out",
    profilePath,
    "--svg",
    chartPath,
    "--input-lengths",
    "512,128",
    "--concurrency",
    "1,4",
    "--context-lengths",
    "256,1024",
    "--output-tokens",
    "16",
    "--requests-per-point",
    "1",
  ]);
  assert.equal(code, 0);
  assert.equal(out, `profile: ${profilePath}\nchart: ${chartPath}\n`);
  assert.match(err, /virtual time/);
  assert.match(err, /^prefill 128 tokens: TTFT 18\.5 ms, \d+ tokens\/s \(median of 1\)$/m);
  assert.match(err, /^decode concurrency 4, context 1024, 16 output tokens: ITL [\d.]+ ms/m);
  const profile = parseProfile(await readFile(profilePath, "utf8"), profilePath);
  assert.deepEqual(
    profile.prefill.map((p) => p.inputTokens),
    [128, 512],
  );
  // The default mocker is Dynamo's polynomial model at --speedup-ratio 1; the file keeps 6 digits.
  assert.ok(Math.abs(profile.prefill[1]!.ttftMs - polynomialTimingModel(1).prefillMs(512)) < 1e-3);
  assert.deepEqual(profile.decode.concurrency, [1, 4]);
  assert.deepEqual(profile.decode.contextTokens, [256, 1024]);
  assert.match(profile.description ?? "", /mocker .*virtual time/);
  const svg = await readFile(chartPath, "utf8");
  assert.equal(svg.match(/<polyline /g)?.length, 3);
});

test("--speedup-ratio divides the mocker's modelled times, as when serving", async () => {
  const folder = await mkdtemp(join(tmpdir(), "armature-profile-cli-"));
  const profilePath = join(folder, "fast.json");
  const args = ["--engine", "mocker", "--out", profilePath, "--input-lengths", "512", "--concurrency", "1"];
  const { code } = await run([...args, "--context-lengths", "256", "--speedup-ratio", "10", "--requests-per-point", "1"]);
  assert.equal(code, 0);
  const profile = parseProfile(await readFile(profilePath, "utf8"), profilePath);
  assert.ok(Math.abs(profile.prefill[0]!.ttftMs - polynomialTimingModel(10).prefillMs(512)) < 1e-4);
});

test("bad flags are refused naming the flag", async () => {
  const refused = async (argv: string[], pattern: RegExp): Promise<void> => {
    await assert.rejects(run(argv), (error: Error & { code?: string }) => {
      assert.equal(error.code, "CONFIG_INVALID");
      assert.match(error.message, pattern);
      return true;
    });
  };
  const out = ["--out", join(tmpdir(), "never-written.json")];
  await refused(out, /--engine must be mocker or llamacpp, got nothing/);
  await refused(["--engine", "vllm", ...out], /--engine must be mocker or llamacpp, got 'vllm'/);
  await refused(["--engine", "mocker"], /--out is required/);
  await refused(
    ["--engine", "mocker", ...out, "--input-lengths", "128,x"],
    /--input-lengths must be a whole number above 0, got 'x'/,
  );
  await refused(["--engine", "mocker", ...out, "--concurrency", "0"], /--concurrency must be a whole number above 0/);
  await refused(["--engine", "mocker", ...out, "--speedup-ratio", "0"], /--speedup-ratio must be a number above 0/);
  await refused(["--engine", "mocker", ...out, "--model", "x.gguf"], /--model is not a flag of --engine mocker/);
  await refused(["--engine", "llamacpp", ...out, "--kv-blocks", "8"], /--kv-blocks is not a flag of --engine llamacpp/);
  // Checked against the engine once it exists (the mocker's context: 32768 tokens by default).
  await refused(["--engine", "mocker", ...out, "--input-lengths", "40000"], /--input-lengths 40000 .*--context-size/);
  await refused(
    ["--engine", "mocker", ...out, "--kv-blocks", "16", "--concurrency", "8", "--context-lengths", "1024"],
    /--concurrency 8 at --context-lengths 1024 needs \d+ KV blocks; the engine has 16/,
  );
  await refused(["--engine", "mocker", ...out, "--no-such-flag"], /Unknown option '--no-such-flag'/);
  await refused(["--engine", "mocker", ...out, "--concurrency"], /--concurrency/);
});
