import assert from "node:assert/strict";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { loadTimingProfile, polynomialTimingModel, profiledTimingModel } from "./timing-model.js";

test("the polynomial model reproduces Dynamo's mocker formulas and divides by the speedup", () => {
  const model = polynomialTimingModel();
  assert.equal(model.prefillMs(1000), 4.209989e-7 * 1e6 + 1.518344e-2 * 1000 + 16.50142);
  assert.equal(model.decodeMs(0.5), -25.74 * 0.25 + 54.01 * 0.5 + 5.74);
  assert.equal(model.prefillMs(0), 0);
  assert.equal(polynomialTimingModel(10).prefillMs(1000), model.prefillMs(1000) / 10);
});

test("a profile interpolates between points and extrapolates past the ends", async () => {
  const path = join(await mkdtemp(join(tmpdir(), "armature-profile-")), "profile.json");
  await writeFile(
    path,
    JSON.stringify({ prefill: { tokens: [100, 200], ms: [10, 20] }, decode: { kvUsage: [0, 1], ms: [5, 15] } }),
  );
  const model = profiledTimingModel(await loadTimingProfile(path));
  assert.equal(model.prefillMs(150), 15);
  assert.equal(model.prefillMs(300), 30);
  assert.equal(model.decodeMs(0.5), 10);
});

test("a malformed profile is refused with the field at fault", async () => {
  const path = join(await mkdtemp(join(tmpdir(), "armature-profile-")), "bad.json");
  await writeFile(path, JSON.stringify({ prefill: { tokens: [1], ms: [1] }, decode: { kvUsage: [0, 1], ms: [1, 2] } }));
  await assert.rejects(loadTimingProfile(path), /"prefill" needs two arrays of equal length/);
});
