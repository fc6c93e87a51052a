import assert from "node:assert/strict";
import { test } from "node:test";
import { parseByteSize } from "./byte-size.js";

test("sizes take binary (KiB) and SI (KB) units, any case, with or without a space", () => {
  // IEC 80000-13: 1 KiB = 2^10 B, 1 MiB = 2^20 B, 1 GiB = 2^30 B; SI: 1 GB = 10^9 B.
  const cases: Array<[string, number]> = [
    ["1048576", 1048576],
    ["512KiB", 524288],
    ["1.5 GiB", 1610612736],
    ["2gb", 2000000000],
    ["64 MiB", 67108864],
    ["0", 0],
  ];
  for (const [text, bytes] of cases) assert.equal(parseByteSize(text), bytes, text);
});

test("anything else is not a size", () => {
  for (const text of ["", "-1", "1 GiBs", "ten", "1e3", "1.5.2 MiB", "1 PiB"]) assert.equal(parseByteSize(text), undefined, text);
});
