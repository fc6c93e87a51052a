import assert from "node:assert/strict";
import { test } from "node:test";
import { KeyStore } from "./key-store.js";

test("a key finds its entry; a wrong key, its prefix or a longer one find nothing", () => {
  const store = new KeyStore([
    { key: "sk-alice-123", name: "alice", requestsPerMinute: 5, models: ["m1"] },
    { key: "sk-bob-456", name: "bob" },
  ]);
  assert.deepEqual(store.find("sk-alice-123"), {
    name: "alice",
    requestsPerMinute: 5,
    tokensPerMinute: undefined,
    maxConcurrent: undefined,
    models: new Set(["m1"]),
  });
  assert.equal(store.find("sk-bob-456")?.name, "bob");
  for (const wrong of ["sk-alice-12", "sk-alice-1234", "SK-ALICE-123", ""]) assert.equal(store.find(wrong), undefined, wrong);
});

test("replace swaps the whole list", () => {
  const store = new KeyStore([{ key: "old", name: "a" }]);
  store.replace([{ key: "new", name: "a" }]);
  assert.equal(store.find("old"), undefined);
  assert.equal(store.find("new")?.name, "a");
  assert.equal(store.size, 1);
});

test("entries carry names and rules, never the key", () => {
  const store = new KeyStore([{ key: "sk-secret", name: "a", maxConcurrent: 2 }]);
  assert.ok(!JSON.stringify(store.entries).includes("sk-secret"));
  assert.equal(store.entries[0]?.maxConcurrent, 2);
});
