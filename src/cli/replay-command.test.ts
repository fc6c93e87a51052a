import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { commandOutput } from "../../test/helpers/command-output.js";
import { formatMooncakeTrace, generateSyntheticTrace } from "../traces/index.js";
import { replayCommand } from "./replay-command.js";

const dir = mkdtempSync(join(tmpdir(), "armature-replay-command-"));
after(() => rmSync(dir, { recursive: true, force: true }));

// 1 req/s with 10 s at 10 req/s every 100 s (bursts at 100, 200 and 300 s), 1,000 prompt and 100
// output tokens: with 10-s planner intervals the bursts recur every 10 readings.
const tracePath = join(dir, "bursts.jsonl");
writeFileSync(
  tracePath,
  formatMooncakeTrace(
    generateSyntheticTrace({
      shape: { kind: "burst", baseRps: 1, burstRps: 10, burstLengthSeconds: 10, burstEverySeconds: 100 },
      durationSeconds: 320,
      seed: 7,
      inputMeanTokens: 1000,
      outputMeanTokens: 100,
      lengthSigma: 0,
    }),
  ),
);
const profilePath = fileURLToPath(new URL("../planner/fixtures/tiny-profile.json", import.meta.url));

const run = (argv: readonly string[]) => commandOutput(replayCommand, argv);

const plannerArgs = (period: string) => [
  tracePath,
  "--workers",
  "1",
  "--planner",
  "sla",
  "--profile",
  profilePath,
  "--planner-interval",
  "10",
  "--planner-load-interval",
  "5",
  "--worker-startup-s",
  "5",
  "--max-workers",
  "4",
  "--predictor-period",
  period,
  "--json",
];

test("--predictor-period reaches the planner: the third burst's floor is raised before it with auto, not with off", async () => {
  const floorsBeforeThirdBurst = async (period: string) => {
    const { code, out, err } = await run(plannerArgs(period));
    assert.equal(code, 0, err);
    const decisions = (JSON.parse(out) as { decisions: Array<{ atMs: number; loop: string; to: number; from: number }> })
      .decisions;
    // The tick at 290 s has seen the readings up to 290 s; the one at 300 s is the burst's own.
    return decisions.filter((d) => d.loop === "throughput" && d.atMs >= 280_000 && d.atMs < 300_000 && d.to > d.from);
  };
  const auto = await floorsBeforeThirdBurst("auto");
  assert.ok(auto.length > 0, "auto raises the floor ahead of the recurring burst");
  const off = await floorsBeforeThirdBurst("off");
  assert.deepEqual(off, [], "off waits for the burst");
});

test("--predictor-period refuses what is not auto, off or seconds, and needs --planner", async () => {
  await assert.rejects(run(plannerArgs("soon")), /--predictor-period must be auto, off or a period in seconds, got "soon"/);
  await assert.rejects(
    run(plannerArgs("15")),
    /--predictor-period \(15 s\) must be a whole number of at least two --planner-interval periods \(10 s\)/,
  );
  await assert.rejects(
    run([tracePath, "--predictor-period", "600"]),
    /--predictor-period is a planner flag: add --planner load or --planner sla/,
  );
});

test("--kv-exclusive-factor below 1 is refused by name", async () => {
  await assert.rejects(run([tracePath, "--kv-exclusive-factor", "0.5"]), /--kv-exclusive-factor must be a number ≥ 1, got '0.5'/);
});
