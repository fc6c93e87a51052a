import assert from "node:assert/strict";
import { MessageInvalidError } from "../../src/protocol/index.js";

/** The path a schema names when it refuses what `parse` reads; fails when it parses. */
export function faultAt(parse: () => unknown): string {
  try {
    parse();
  } catch (error) {
    assert.ok(error instanceof MessageInvalidError, String(error));
    return error.path;
  }
  assert.fail("parsed");
}
