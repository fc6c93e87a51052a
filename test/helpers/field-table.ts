import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import type { FieldRule } from "../../src/frontend/requests/request-fields.js";
import { isArmatureError } from "../../src/protocol/index.js";

const docs = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");

/** The rows of the docs/api.md table under `heading`: field → status. */
function documented(heading: string): Map<string, string> {
  const section = docs.split(heading)[1]?.split("\n## ")[0] ?? "";
  return new Map([...section.matchAll(/^\| `([a-z][a-z0-9_]*)` \| (\w+) \|/gm)].map((m) => [m[1] as string, m[2] as string]));
}

export interface FieldTable {
  readonly name: string;
  readonly fields: Readonly<Record<string, FieldRule>>;
  /** Where `reference` comes from, for the test's name. */
  readonly schema: string;
  /** Every body field the API's own definition has. */
  readonly reference: readonly string[];
  /** The docs/api.md heading whose table lists the fields. */
  readonly heading: string;
  /** A valid body that each check adds one field to. */
  readonly base: Record<string, unknown>;
  readonly parse: (raw: unknown) => unknown;
}

/** The checks request-fields.test.ts makes of the completion routes' tables, for one more route's table. */
export function checkFieldTable(route: FieldTable): void {
  test(`${route.name}: every field of ${route.schema} has a rule`, () => {
    assert.deepEqual(
      route.reference.filter((f) => !Object.hasOwn(route.fields, f)),
      [],
    );
  });

  test(`${route.name}: docs/api.md says what the code does, field by field`, () => {
    const code = new Map(Object.entries(route.fields).map(([f, r]) => [f, r.status as string]));
    assert.deepEqual(new Map([...documented(route.heading)].sort()), new Map([...code].sort()));
  });

  test(`${route.name}: each refused field is refused by name, and its no-op value is taken`, () => {
    for (const [field, rule] of Object.entries(route.fields)) {
      if (rule.status !== "refused") continue;
      const asking = [true, 5, "x", [{ type: "function" }], { a: 1 }].find((v) => !rule.noOp(v));
      assert.throws(
        () => route.parse({ ...route.base, [field]: asking }),
        (e: unknown) => isArmatureError(e) && e.code === "NOT_SUPPORTED" && e.param === field,
        field,
      );
      const noOp = [null, false, 0, 1, [], {}, "", "none", "auto", ["text"]].find((v) => rule.noOp(v));
      assert.doesNotThrow(() => route.parse({ ...route.base, [field]: noOp }), `${field}: ${JSON.stringify(noOp)}`);
    }
  });

  test(`${route.name}: a field in no table is refused by name`, () => {
    for (const field of ["min_tokens", "temprature", "__proto__x"]) {
      assert.throws(
        () => route.parse({ ...route.base, [field]: 1 }),
        (e: unknown) => isArmatureError(e) && e.code === "REQUEST_INVALID" && e.param === field,
      );
    }
  });
}
