import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DirectoryObjectStore, MemoryObjectStore, type ObjectStore } from "./object-store.js";

async function storeContract(store: ObjectStore): Promise<void> {
  await store.write("models/a b/kv#1", 0, Buffer.from("hello "));
  await store.write("models/a b/kv#1", 6, Buffer.from("world"));
  assert.equal(await store.size("models/a b/kv#1"), 11);
  const target = Buffer.alloc(5);
  await store.read("models/a b/kv#1", 6, target);
  assert.equal(target.toString(), "world");
  await assert.rejects(store.read("models/a b/kv#1", 8, Buffer.alloc(5)), { code: "TRANSFER_FAILED" });
  await store.delete("models/a b/kv#1");
  await assert.rejects(store.size("models/a b/kv#1"), { code: "TRANSFER_FAILED" });
}

test("the memory object store writes, grows, reads by range, deletes and refuses what is missing", () =>
  storeContract(new MemoryObjectStore()));

test("the directory object store does the same with one file per key", async () => {
  const root = await mkdtemp(join(tmpdir(), "armature-objects-"));
  try {
    await storeContract(new DirectoryObjectStore(join(root, "store")));
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
