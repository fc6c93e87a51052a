import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { loadTrace } from "../sim/index.js";
import { azureRowsToTrace, convertAzureTrace, parseAzureCsv } from "./azure-trace.js";
import { formatMooncakeTrace } from "./mooncake-jsonl.js";

// The Azure 2023 conversation trace as saved beside the repository (shared/research/data/README.md).
const CONV_CSV = join(
  dirname(fileURLToPath(import.meta.url)),
  "../../../shared/research/data/azure-llm-2023/AzureLLMInferenceTrace_conv.csv",
);

// Across an hour boundary; 1 ms; 2.5 ms (rounds up); 4.315579 s. Lengths 374, 512, 513 and 1025 tokens
// take 1, 1, 2 and 3 blocks of 512.
const CSV = `TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:59:59.9990000,374,44
2023-11-16 19:00:00.0000000,512,109
2023-11-16 19:00:00.0015000,513,0
2023-11-16 19:00:04.3145790,1025,55
`;

describe("azureRowsToTrace", () => {
  it("gives the hand-computed Mooncake lines: ms from the first row, fresh ids per block", () => {
    assert.equal(
      formatMooncakeTrace(azureRowsToTrace(parseAzureCsv(CSV, "hand.csv"))),
      [
        `{"timestamp":0,"input_length":374,"output_length":44,"hash_ids":[0]}`,
        `{"timestamp":1,"input_length":512,"output_length":109,"hash_ids":[1]}`,
        `{"timestamp":3,"input_length":513,"output_length":0,"hash_ids":[2,3]}`,
        `{"timestamp":4316,"input_length":1025,"output_length":55,"hash_ids":[4,5,6]}`,
        "",
      ].join("\n"),
    );
  });

  it("with --system-blocks, shares the first full blocks of every prompt", () => {
    // 374 tokens have no full block, so nothing shared; 512, 513 and 1025 tokens share block 0.
    const trace = azureRowsToTrace(parseAzureCsv(CSV, "hand.csv"), { systemBlocks: 1 });
    assert.deepEqual(
      trace.map((r) => r.hashIds),
      [[1], [0], [0, 2], [0, 3, 4]],
    );
  });

  it("puts rows in time order and counts from the earliest; reads other column orders and time zones", () => {
    const csv = `GeneratedTokens,ContextTokens,TIMESTAMP
7,100,2023-11-16T18:00:01.5+01:00
8,200,2023-11-16 17:00:00Z
`;
    const trace = azureRowsToTrace(parseAzureCsv(csv, "shuffled.csv"));
    assert.deepEqual(trace, [
      { timestamp: 0, inputLength: 200, outputLength: 8, hashIds: [0] },
      { timestamp: 1500, inputLength: 100, outputLength: 7, hashIds: [1] },
    ]);
  });

  it("refuses a missing column or a bad value, naming the file and line", () => {
    assert.throws(() => parseAzureCsv("TIMESTAMP,ContextTokens\n", "a.csv"), {
      code: "CONFIG_INVALID",
      message: /a\.csv: no GeneratedTokens column/,
    });
    assert.throws(() => parseAzureCsv(`${CSV}2023-11-16 19:00:05,0,1\n`, "b.csv"), {
      code: "CONFIG_INVALID",
      message: /b\.csv:6: ContextTokens must be a whole number ≥ 1/,
    });
    assert.throws(() => parseAzureCsv(`${CSV}yesterday,5,1\n`, "c.csv"), {
      code: "CONFIG_INVALID",
      message: /c\.csv:6: TIMESTAMP/,
    });
    assert.throws(() => azureRowsToTrace([], { blockSize: 0 }), { code: "CONFIG_INVALID", param: "--block-size" });
  });
});

describe("convertAzureTrace", () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), "armature-azure-trace-"));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const absent = existsSync(CONV_CSV) ? false : `${CONV_CSV} is not here`;
  it("converts the real conversation CSV: one line per data row, loadable, starting as the CSV does", {
    skip: absent,
  }, async () => {
    const out = join(dir, "conv.jsonl");
    await convertAzureTrace(CONV_CSV, out);
    const csvRows = (await readFile(CONV_CSV, "utf8")).split("\n").filter((line) => line.trim() !== "").length;
    const lines = (await readFile(out, "utf8")).split("\n").filter((line) => line !== "");
    assert.equal(lines.length, csvRows - 1);
    // The CSV's first rows: 18:15:46.6805900 (374, 44), 18:15:50.9951690 (396, 109) → 4314.579 ms.
    assert.equal(lines[0], `{"timestamp":0,"input_length":374,"output_length":44,"hash_ids":[0]}`);
    assert.equal(lines[1], `{"timestamp":4315,"input_length":396,"output_length":109,"hash_ids":[1]}`);
    const trace = await loadTrace(out);
    assert.equal(trace.length, csvRows - 1);
    for (const r of trace) assert.equal(r.hashIds.length, Math.ceil(r.inputLength / 512));
  });
});
