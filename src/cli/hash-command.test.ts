import assert from "node:assert/strict";
import { test } from "node:test";
import { hashCommand } from "./hash-command.js";

test("armature hash --json prints Dynamo's published vectors", () => {
  let out = "";
  const code = hashCommand(["--block-size", "4", "--tokens", "1,2,3,4,5,6,7,8,9,10,11,12,13", "--json"], (t) => {
    out += t;
  });
  assert.equal(code, 0);
  assert.deepEqual(JSON.parse(out), {
    block_size: 4,
    blocks: [
      { local: "14643705804678351452", sequence: "14643705804678351452" },
      { local: "16777012769546811212", sequence: "4945711292740353085" },
      { local: "483935686894639516", sequence: "12583592247330656132" },
    ],
  });
});

test("the table mentions tokens left out of the last partial block", () => {
  let out = "";
  hashCommand(["--block-size", "4", "--tokens", "1,2,3,4,5"], (t) => {
    out += t;
  });
  assert.match(out, /1 full block\(s\), 1 trailing token\(s\) not hashed/);
});

test("bad arguments say what to pass", () => {
  assert.throws(() => hashCommand(["--block-size", "0", "--tokens", "1"], () => {}), /--block-size must be a positive integer/);
  assert.throws(() => hashCommand(["--block-size", "4", "--tokens", "1,x"], () => {}), /--tokens must be comma-separated/);
});
