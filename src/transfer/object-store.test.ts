import assert from "node:assert/strict";
import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { objectStoreContract } from "./contracts/object-store-contract.js";
import { DirectoryObjectStore } from "./directory-object-store.js";
import { MemoryObjectStore, type ObjectStore } from "./object-store.js";

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

objectStoreContract("memory", async () => ({ store: new MemoryObjectStore(), close: async () => {} }), {
  atomicPutIfAbsent: true,
});

objectStoreContract(
  "directory",
  async () => {
    const root = await mkdtemp(join(tmpdir(), "armature-objects-"));
    return {
      store: await DirectoryObjectStore.open(join(root, "store")),
      close: () => rm(root, { recursive: true, force: true }),
    };
  },
  { atomicPutIfAbsent: true },
);

test("the directory store leaves no temporary files behind and keeps keys '.' and '..' inside its root", async () => {
  const root = await mkdtemp(join(tmpdir(), "armature-objects-"));
  try {
    const store = await DirectoryObjectStore.open(join(root, "store"));
    assert.equal(await store.putIfAbsent(".", Buffer.from("dot")), true);
    assert.equal(await store.putIfAbsent("..", Buffer.from("dots")), true);
    assert.equal(await store.putIfAbsent("..", Buffer.from("again")), false);
    assert.equal((await store.get("."))?.toString(), "dot");
    assert.equal((await store.get(".."))?.toString(), "dots");
    assert.deepEqual((await readdir(join(root, "store"))).sort(), ["%2E", "%2E%2E"]);
    assert.deepEqual(await readdir(root), ["store"]);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test("the directory store's list skips files it did not write", async () => {
  const root = await mkdtemp(join(tmpdir(), "armature-objects-"));
  try {
    const store = await DirectoryObjectStore.open(root);
    await store.putIfAbsent("a", Buffer.from("1"));
    await writeFile(join(root, "%tmp-left-by-a-crash"), "partial");
    await writeFile(join(root, "%zz-not-an-encoding"), "x");
    const keys: string[] = [];
    for await (const entry of store.list("")) keys.push(entry.key);
    assert.deepEqual(keys, ["a"]);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test("opening a directory store under a file fails at open, naming the directory", async () => {
  const root = await mkdtemp(join(tmpdir(), "armature-objects-"));
  try {
    await writeFile(join(root, "file"), "x");
    await assert.rejects(DirectoryObjectStore.open(join(root, "file", "store")), (error: Error & { code?: string }) => {
      assert.equal(error.code, "CONFIG_INVALID");
      assert.ok(error.message.includes(join(root, "file", "store")), error.message);
      return true;
    });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
