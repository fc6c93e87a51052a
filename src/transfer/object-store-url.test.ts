import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { openObjectStore, parseObjectStoreUrl } from "./object-store-url.js";

test("object store URLs name a directory, a memory store, an S3 bucket or a NATS bucket", () => {
  assert.deepEqual(parseObjectStoreUrl("dir:///var/cache/armature%20kv"), {
    kind: "directory",
    root: "/var/cache/armature kv",
  });
  assert.deepEqual(parseObjectStoreUrl("memory://kv-tier"), { kind: "memory", name: "kv-tier" });
  assert.deepEqual(parseObjectStoreUrl("nats://kv_blocks-1"), { kind: "nats", bucket: "kv_blocks-1" });
  assert.deepEqual(parseObjectStoreUrl("s3://kv.blocks?endpoint=http://127.0.0.1:9000&region=eu-west-1&forcePathStyle=true"), {
    kind: "s3",
    options: {
      bucket: "kv.blocks",
      endpoint: "http://127.0.0.1:9000",
      region: "eu-west-1",
      forcePathStyle: true,
      conditionalPut: undefined,
    },
  });
  assert.deepEqual(parseObjectStoreUrl("s3://kv-blocks?conditionalPut=false"), {
    kind: "s3",
    options: {
      bucket: "kv-blocks",
      endpoint: undefined,
      region: undefined,
      forcePathStyle: undefined,
      conditionalPut: false,
    },
  });
});

test("a bad object store URL is refused as CONFIG_INVALID naming the URL, the fault and the accepted forms", () => {
  const bad: Array<[string, RegExp]> = [
    ["", /no scheme/],
    ["/var/cache/kv", /no scheme/],
    ["file:///var/cache/kv", /scheme file:\/\/ is not one of/],
    ["dir://var/cache/kv", /absolute path after a third slash/],
    ["dir:///var/cache?x=1", /without '\?'/],
    ["dir:///var/%E0%A4%A", /percent-escape/],
    ["memory://", /takes a name/],
    ["s3://Kv_Blocks", /bucket name/],
    ["s3://kv-blocks/prefix", /no path/],
    ["s3://kv-blocks?endpont=http://h:1", /parameter endpont is not one of endpoint, region/],
    ["s3://kv-blocks?forcePathStyle=yes", /forcePathStyle must be true or false/],
    ["s3://kv-blocks?endpoint=ftp://h:1", /endpoint must be http/],
    ["s3://kv-blocks?endpoint=http://h:1/path", /endpoint must be http/],
    ["nats://127.0.0.1:4222", /bucket name .* the server is the bus connection's/],
  ];
  for (const [url, fault] of bad) {
    assert.throws(
      () => parseObjectStoreUrl(url),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, "CONFIG_INVALID", url);
        assert.ok(error.message.includes(`'${url}'`), error.message);
        assert.match(error.message, fault);
        assert.match(error.message, /Accepted: dir:\/\/\/ABSOLUTE\/PATH, memory:\/\/NAME, s3:\/\/BUCKET.* nats:\/\/BUCKET/);
        return true;
      },
    );
  }
});

test("a refused URL does not echo what sits before an '@'", () => {
  assert.throws(
    () => parseObjectStoreUrl("s3://AKIAEXAMPLE:very-secret@kv-blocks"),
    (error: Error) => !error.message.includes("very-secret") && error.message.includes("s3://***@kv-blocks"),
  );
});

test("memory:// URLs of one name open one store in this process", async () => {
  const a = await openObjectStore("memory://shared-url-test");
  const b = await openObjectStore("memory://shared-url-test");
  const other = await openObjectStore("memory://other-url-test");
  assert.equal(await a.putIfAbsent("kv/1", Buffer.from("block")), true);
  assert.equal((await b.get("kv/1"))?.toString(), "block");
  assert.equal(await other.get("kv/1"), undefined);
});

test("a dir:// URL opens a directory store, and one that cannot be written fails at open", async () => {
  const root = await mkdtemp(join(tmpdir(), "armature-objects-url-"));
  try {
    const store = await openObjectStore(`dir://${join(root, "kv store").replaceAll(" ", "%20")}`);
    assert.equal(await store.putIfAbsent("kv/1", Buffer.from("block")), true);
    assert.equal((await store.get("kv/1"))?.toString(), "block");
    await writeFile(join(root, "a-file"), "x");
    await assert.rejects(openObjectStore(`dir://${join(root, "a-file", "kv")}`), (error: Error & { code?: string }) => {
      assert.equal(error.code, "CONFIG_INVALID");
      assert.ok(error.message.includes(join(root, "a-file", "kv")), error.message);
      return true;
    });
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test("a nats:// URL without a bus connection fails at open, naming the URL", async () => {
  await assert.rejects(openObjectStore("nats://kv-blocks"), (error: Error & { code?: string }) => {
    assert.equal(error.code, "CONFIG_INVALID");
    assert.ok(error.message.includes("nats://kv-blocks"), error.message);
    assert.match(error.message, /--bus/);
    return true;
  });
});
