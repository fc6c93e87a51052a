import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { loadTrace } from "../sim/index.js";
import { traceCommand } from "./trace-command.js";

describe("armature trace", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "armature-trace-command-"));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const run = async (argv: readonly string[]): Promise<string> => {
    let text = "";
    assert.equal(await traceCommand(argv, (t) => (text += t)), 0);
    return text;
  };

  it("synth writes the trace the flags describe and says how many requests it wrote", async () => {
    const out = join(dir, "step.jsonl");
    const flags = ["--shape", "step", "--steps", "0:1,50:4", "--duration", "100", "--out", out];
    const said = await run(["synth", ...flags, "--system-blocks", "2", "--length-sigma", "0", "--input-mean", "100"]);
    const trace = await loadTrace(out);
    assert.match(said, new RegExp(`^wrote ${trace.length} requests to ${out}`));
    assert.ok(trace.length > 0);
    for (const r of trace) {
      assert.equal(r.inputLength, 2 * 512 + 100);
      assert.deepEqual(r.hashIds.slice(0, 2), [0, 1]);
    }
  });

  it("synth --priority-mix gives every request one of the classes", async () => {
    const out = join(dir, "mix.jsonl");
    await run(["synth", "--shape", "step", "--steps", "0:5", "--duration", "60", "--out", out, "--priority-mix", "0:0.2,10:0.8"]);
    const trace = await loadTrace(out);
    assert.ok(trace.length > 100);
    assert.ok(trace.every((r) => r.priority === 0 || r.priority === 10));
    assert.ok(trace.some((r) => r.priority === 0) && trace.some((r) => r.priority === 10));
  });

  it("convert --from azure writes one line per CSV row", async () => {
    const csv = join(dir, "in.csv");
    const out = join(dir, "azure.jsonl");
    await writeFile(
      csv,
      "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:47,600,5\n",
    );
    await run(["convert", "--from", "azure", csv, "--out", out]);
    assert.equal(
      await readFile(out, "utf8"),
      `{"timestamp":0,"input_length":374,"output_length":44,"hash_ids":[0]}\n{"timestamp":319,"input_length":600,"output_length":5,"hash_ids":[1,2]}\n`,
    );
  });

  it("refuses bad flags with CONFIG_INVALID, naming the flag", async () => {
    const sine = ["synth", "--shape", "sine", "--min-rate", "1", "--max-rate", "2", "--period", "10", "--duration", "10"];
    const cases: [string[], RegExp][] = [
      [["synth", "--shape", "square"], /--shape takes sine, step, burst/],
      [["synth", "--shape", "sine", "--min-rate", "1", "--max-rate", "2", "--duration", "1"], /--shape sine needs --period/],
      [[...sine, "--steps", "0:1", "--out", "x"], /--steps applies to --shape step only/],
      [sine, /--out FILE/],
      [[...sine, "--out", "x", "--seed", "abc"], /--seed must be a number, got 'abc'/],
      [[...sine, "--out", "x", "--multi-turn-share", "1"], /--multi-turn-share must be a number in \[0, 1\)/],
      [[...sine, "--out", "x", "--bogus", "1"], /'--bogus'/],
      [[...sine, "--out", "x", "--priority-mix", "0:0.5,high:0.5"], /--priority-mix takes PRIORITY:SHARE/],
      [[...sine, "--out", "x", "--priority-mix", "0:0.5,1:0.4"], /--priority-mix: the shares must sum to 1/],
      [["convert", "--from", "sharegpt", "a.csv", "--out", "x"], /--from takes azure/],
      [["convert", "--from", "azure", "--out", "x"], /one input file/],
      [["replay"], /takes synth or convert/],
    ];
    for (const [argv, message] of cases) {
      await assert.rejects(
        traceCommand(argv, () => {}),
        { code: "CONFIG_INVALID", message },
        argv.join(" "),
      );
    }
  });
});
