import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { test } from "node:test";
import type { ObjectEntry, ObjectStore } from "../object-store.js";

/** A fresh, empty store of the binding under test. */
export interface ObjectStoreFixture {
  readonly store: ObjectStore;
  /** Closes the store and removes what the fixture made (bucket, directory, server). */
  close(): Promise<void>;
}

/** What the binding promises beyond the port's minimum. */
export interface ObjectStoreGuarantees {
  /** Racing `putIfAbsent` calls for one key have exactly one winner (the store's `atomicPutIfAbsent`). */
  readonly atomicPutIfAbsent: boolean;
}

// Keys like the KV tier's (a block hash under a model prefix) and ones that need escaping.
const blockKey = "kv/model-a/00c0ffee1234abcd";
const oddKey = "models/a b/kv#1 ünï?&=%";

/** The behaviour every `ObjectStore` binding must show. Call inside a test file. */
export function objectStoreContract(
  name: string,
  makeFixture: () => Promise<ObjectStoreFixture>,
  guarantees: ObjectStoreGuarantees,
): void {
  const withStore = async (body: (store: ObjectStore) => Promise<void>): Promise<void> => {
    const fixture = await makeFixture();
    try {
      await body(fixture.store);
    } finally {
      await fixture.close();
    }
  };

  test(`${name}: an absent key reads as undefined, and size and read refuse it without retry`, () =>
    withStore(async (store) => {
      assert.equal(await store.get(blockKey), undefined);
      await assert.rejects(store.size(blockKey), { code: "TRANSFER_FAILED", retryable: false });
      await assert.rejects(store.read(blockKey, 0, Buffer.alloc(4)), { code: "TRANSFER_FAILED", retryable: false });
      await store.delete(blockKey); // deleting what is absent is no error
      await assert.rejects(store.putIfAbsent("", Buffer.from("x")), { code: "TRANSFER_FAILED" });
    }));

  test(`${name}: putIfAbsent stores an object once and never overwrites it`, () =>
    withStore(async (store) => {
      const first = randomBytes(4096);
      assert.equal(await store.putIfAbsent(blockKey, first), true);
      assert.deepEqual(await store.get(blockKey), first);
      assert.equal(await store.putIfAbsent(blockKey, randomBytes(100)), false);
      assert.deepEqual(await store.get(blockKey), first);
      assert.equal(await store.size(blockKey), 4096);
    }));

  test(`${name}: put replaces an object whole, longer or shorter, and stores a new one`, () =>
    withStore(async (store) => {
      await store.put(blockKey, Buffer.from("a first state, rather long"));
      await store.put(blockKey, Buffer.from("short"));
      assert.equal((await store.get(blockKey))?.toString(), "short");
      assert.equal(await store.size(blockKey), 5);
      await store.put(blockKey, Buffer.from("a longer state than short"));
      assert.equal((await store.get(blockKey))?.toString(), "a longer state than short");
      await assert.rejects(store.put("", Buffer.from("x")), { code: "TRANSFER_FAILED" });
    }));

  test(`${name}: objects are copies: changing the bytes given or returned changes nothing stored`, () =>
    withStore(async (store) => {
      const bytes = Buffer.from("immutable block");
      await store.putIfAbsent(oddKey, bytes);
      bytes.fill(0);
      const got = await store.get(oddKey);
      assert.equal(got?.toString(), "immutable block");
      got?.fill(0);
      assert.equal((await store.get(oddKey))?.toString(), "immutable block");
    }));

  test(`${name}: an empty object is stored, sized and read back`, () =>
    withStore(async (store) => {
      assert.equal(await store.putIfAbsent(blockKey, new Uint8Array(0)), true);
      assert.equal(await store.size(blockKey), 0);
      assert.deepEqual(await store.get(blockKey), Buffer.alloc(0));
      assert.equal(await store.putIfAbsent(blockKey, Buffer.from("late")), false);
    }));

  const racers = 8;
  const guarantee = guarantees.atomicPutIfAbsent
    ? "exactly one wins and its bytes are stored"
    : "at least one wins and one writer's bytes are stored whole";
  test(`${name}: ${racers} racing putIfAbsent calls for one key: ${guarantee}`, () =>
    withStore(async (store) => {
      assert.equal(store.atomicPutIfAbsent, guarantees.atomicPutIfAbsent);
      // 300 KiB spans several chunks on stores that chunk (NATS: 128 KiB).
      const payloads = Array.from({ length: racers }, () => randomBytes(300 * 1024));
      const won = await Promise.all(payloads.map((p) => store.putIfAbsent(blockKey, p)));
      const stored = await store.get(blockKey);
      const winners = payloads.filter((_, i) => won[i]);
      assert.ok(winners.length >= 1, "somebody must win");
      if (guarantees.atomicPutIfAbsent) {
        assert.equal(winners.length, 1, `winners: ${winners.length}`);
        assert.deepEqual(stored, winners[0]);
      } else {
        assert.ok(
          payloads.some((p) => stored?.equals(p)),
          "the stored object must be one writer's bytes",
        );
      }
      assert.equal(await store.putIfAbsent(blockKey, randomBytes(10)), false);
    }));

  test(`${name}: read fills a buffer from a byte range, across chunk boundaries, and refuses one past the end`, () =>
    withStore(async (store) => {
      const bytes = randomBytes(300 * 1024);
      await store.putIfAbsent(blockKey, bytes);
      const middle = Buffer.alloc(70_000);
      await store.read(blockKey, 100_000, middle);
      assert.deepEqual(middle, bytes.subarray(100_000, 170_000));
      const tail = Buffer.alloc(24);
      await store.read(blockKey, bytes.length - 24, tail);
      assert.deepEqual(tail, bytes.subarray(bytes.length - 24));
      await assert.rejects(store.read(blockKey, bytes.length - 10, Buffer.alloc(20)), {
        code: "TRANSFER_FAILED",
        retryable: false,
      });
    }));

  test(`${name}: write at an offset grows an object and changes it in place`, () =>
    withStore(async (store) => {
      await store.write(oddKey, 0, Buffer.from("hello "));
      await store.write(oddKey, 6, Buffer.from("world"));
      await store.write(oddKey, 0, Buffer.from("J"));
      assert.equal(await store.size(oddKey), 11);
      assert.equal((await store.get(oddKey))?.toString(), "Jello world");
      const target = Buffer.alloc(5);
      await store.read(oddKey, 6, target);
      assert.equal(target.toString(), "world");
    }));

  test(`${name}: delete removes an object, and its key can be put again`, () =>
    withStore(async (store) => {
      await store.putIfAbsent(blockKey, Buffer.from("first"));
      await store.putIfAbsent("kv/other", Buffer.from("stays"));
      await store.delete(blockKey);
      assert.equal(await store.get(blockKey), undefined);
      await assert.rejects(store.size(blockKey), { code: "TRANSFER_FAILED" });
      assert.equal(await store.putIfAbsent(blockKey, Buffer.from("second")), true);
      assert.equal((await store.get(blockKey))?.toString(), "second");
      assert.equal((await store.get("kv/other"))?.toString(), "stays");
    }));

  test(`${name}: list gives the keys under a prefix with their sizes`, () =>
    withStore(async (store) => {
      const keys = ["kv/model-a/1", "kv/model-a/2", "kv/model-a/3", "kv/model-b/1", oddKey];
      for (const [i, key] of keys.entries()) await store.putIfAbsent(key, Buffer.alloc(i * 10 + 1));
      await store.delete("kv/model-a/3");
      assert.deepEqual(await listed(store, "kv/model-a/"), [
        { key: "kv/model-a/1", bytes: 1 },
        { key: "kv/model-a/2", bytes: 11 },
      ]);
      assert.deepEqual(await listed(store, "models/a b/"), [{ key: oddKey, bytes: 41 }]);
      assert.deepEqual(await listed(store, "nothing/"), []);
      assert.deepEqual(
        (await listed(store, "")).map((e) => e.key),
        ["kv/model-a/1", "kv/model-a/2", "kv/model-b/1", oddKey].sort(),
      );
    }));
}

async function listed(store: ObjectStore, prefix: string): Promise<ObjectEntry[]> {
  const entries: ObjectEntry[] = [];
  for await (const entry of store.list(prefix)) entries.push(entry);
  return entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}
