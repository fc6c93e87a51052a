import assert from "node:assert/strict";
import { test } from "node:test";
import { GrammarCache } from "./grammar-cache.js";
import { llamaRuntime } from "./llama-runtime.js";

const schema = (n: number) => ({ type: "object", properties: { [`field${n}`]: { type: "integer" } }, required: [`field${n}`] });

test("the grammar cache keeps the most recently used schemas, at most its limit", async () => {
  // Regression: grammars were kept per distinct user schema forever.
  const cache = new GrammarCache(await llamaRuntime(), 3);
  const first = await cache.get({ type: "json_schema", schema: schema(1) });
  for (let n = 2; n <= 3; n++) await cache.get({ type: "json_schema", schema: schema(n) });
  assert.equal(await cache.get({ type: "json_schema", schema: schema(1) }), first, "a hit returns the compiled grammar");
  for (let n = 4; n <= 10; n++) await cache.get({ type: "json_schema", schema: schema(n) });
  assert.equal(cache.size, 3);
  assert.notEqual(await cache.get({ type: "json_schema", schema: schema(1) }), first, "schema 1 was evicted and compiled anew");
});

test("a schema that cannot be enforced is refused naming the keyword's place in response_format, and not kept", async () => {
  const cache = new GrammarCache(await llamaRuntime(), 3);
  await assert.rejects(
    cache.get({ type: "json_schema", schema: { type: "object", properties: { a: { enum: "not a list" } } } }),
    (e: unknown) => (e as { param?: string }).param === "response_format.json_schema.schema/properties/a/enum",
  );
  assert.equal(cache.size, 0);
});

test("the cache keys on the compiled grammar: schemas that differ only in annotations share one", async () => {
  const cache = new GrammarCache(await llamaRuntime(), 3);
  const plain = await cache.get({ type: "json_schema", schema: schema(1) });
  const annotated = await cache.get({ type: "json_schema", schema: { ...schema(1), title: "T", description: "a field" } });
  assert.equal(annotated, plain);
  assert.equal(cache.size, 1);
});
