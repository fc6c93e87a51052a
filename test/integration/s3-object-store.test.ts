import assert from "node:assert/strict";
import { createServer, request, type Server } from "node:http";
import { after, before, test } from "node:test";
import { CreateBucketCommand, HeadObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { objectStoreContract } from "../../src/transfer/contracts/object-store-contract.js";
import { openObjectStore, S3ObjectStore } from "../../src/transfer/index.js";
import { S3RVER_CREDENTIALS, type S3rver, startS3rver } from "../helpers/s3rver.js";

// The object store contract against a real S3 server: s3rver (Node), in its own process on a free
// loopback port. s3rver ignores If-None-Match on PUT, so the store finds conditional puts absent and
// falls back to HeadObject-then-PutObject; a proxy that adds the condition covers the other path.
const credentials = S3RVER_CREDENTIALS;

/**
 * Forwards to s3rver, answering 412 to an `If-None-Match: *` PUT of a key that exists, one such PUT
 * per key at a time: the condition as S3 evaluates it, which s3rver lacks.
 */
async function startConditionalProxy(upstream: string): Promise<{ endpoint: string; server: Server }> {
  const target = new URL(upstream);
  const locks = new Map<string, Promise<void>>();
  const exists = (path: string) => {
    const [, bucket = "", ...key] = path.split("/");
    const head = new HeadObjectCommand({ Bucket: bucket, Key: decodeURIComponent(key.join("/")) });
    return admin.send(head).then(
      () => true,
      () => false,
    );
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = req.url?.split("?")[0] ?? "/";
    const conditional = req.method === "PUT" && req.headers["if-none-match"] === "*";
    const previous = (conditional && locks.get(path)) || Promise.resolve();
    let release = () => {};
    if (conditional)
      locks.set(
        path,
        previous.then(() => new Promise<void>((r) => (release = r))),
      );
    await previous;
    if (conditional && (await exists(path))) {
      res.writeHead(412, { "content-type": "application/xml" });
      res.end(
        "<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message></Error>",
      );
      release();
      return;
    }
    const out = request(
      { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on("end", release);
      },
    );
    out.on("error", () => {
      res.destroy();
      release();
    });
    out.end(Buffer.concat(chunks));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { endpoint: `http://127.0.0.1:${port}`, server };
}

let s3: S3rver;
let admin: S3Client;
let bucketSeq = 0;

before(async () => {
  s3 = await startS3rver();
  admin = new S3Client({ endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true, credentials });
});
after(async () => {
  admin?.destroy();
  await s3?.stop();
});

async function newBucket(): Promise<string> {
  const bucket = `contract-${process.pid}-${++bucketSeq}`;
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  return bucket;
}

// Two keys a page, so that listing crosses pages.
objectStoreContract(
  "S3 (s3rver)",
  async () => {
    const store = await S3ObjectStore.open({
      bucket: await newBucket(),
      endpoint: s3.endpoint,
      forcePathStyle: true,
      credentials,
      listPageSize: 2,
    });
    return { store, close: () => store.close() };
  },
  { atomicPutIfAbsent: false },
);

objectStoreContract(
  "S3 (a server that honours If-None-Match)",
  async () => {
    const proxy = await startConditionalProxy(s3.endpoint);
    const store = await S3ObjectStore.open({
      bucket: await newBucket(),
      endpoint: proxy.endpoint,
      forcePathStyle: true,
      credentials,
    });
    return {
      store,
      async close() {
        await store.close();
        proxy.server.closeAllConnections();
        await new Promise((r) => proxy.server.close(r));
      },
    };
  },
  { atomicPutIfAbsent: true },
);

test("the S3 store's probe leaves no object behind", async () => {
  const bucket = await newBucket();
  const store = await S3ObjectStore.open({ bucket, endpoint: s3.endpoint, forcePathStyle: true, credentials });
  try {
    const keys: string[] = [];
    for await (const entry of store.list("")) keys.push(entry.key);
    assert.deepEqual(keys, []);
  } finally {
    await store.close();
  }
});

test("an s3:// URL opens the bucket with credentials from the AWS environment variables", async () => {
  const bucket = await newBucket();
  const saved = { ...process.env };
  process.env.AWS_ACCESS_KEY_ID = credentials.accessKeyId;
  process.env.AWS_SECRET_ACCESS_KEY = credentials.secretAccessKey;
  try {
    const store = await openObjectStore(`s3://${bucket}?endpoint=${s3.endpoint}&region=us-east-1&forcePathStyle=true`);
    try {
      assert.equal(await store.putIfAbsent("kv/1", Buffer.from("block")), true);
      const head = await admin.send(new HeadObjectCommand({ Bucket: bucket, Key: "kv/1" }));
      assert.equal(head.ContentLength, 5);
    } finally {
      await store.close();
    }
    await assert.rejects(
      openObjectStore(`s3://no-such-bucket?endpoint=${s3.endpoint}&forcePathStyle=true`),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, "CONFIG_INVALID");
        assert.match(error.message, /no-such-bucket/);
        return true;
      },
    );
  } finally {
    process.env.AWS_ACCESS_KEY_ID = saved.AWS_ACCESS_KEY_ID;
    process.env.AWS_SECRET_ACCESS_KEY = saved.AWS_SECRET_ACCESS_KEY;
    if (saved.AWS_ACCESS_KEY_ID === undefined) delete process.env.AWS_ACCESS_KEY_ID;
    if (saved.AWS_SECRET_ACCESS_KEY === undefined) delete process.env.AWS_SECRET_ACCESS_KEY;
  }
});

test("a stopped S3 endpoint fails operations as retryable TRANSFER_FAILED, and fails at open", async () => {
  const own = await startS3rver();
  let stopped = false;
  try {
    const client = new S3Client({ endpoint: own.endpoint, region: "us-east-1", forcePathStyle: true, credentials });
    await client.send(new CreateBucketCommand({ Bucket: "going-away" }));
    client.destroy();
    const options = { bucket: "going-away", endpoint: own.endpoint, forcePathStyle: true, credentials };
    const store = await S3ObjectStore.open(options);
    assert.equal(await store.putIfAbsent("kv/1", Buffer.from("block")), true);
    await own.stop();
    stopped = true;
    const retryable = { code: "TRANSFER_FAILED", retryable: true };
    await assert.rejects(store.get("kv/1"), retryable);
    await assert.rejects(store.putIfAbsent("kv/2", Buffer.from("block")), retryable);
    await assert.rejects(store.read("kv/1", 0, Buffer.alloc(2)), retryable);
    await store.close();
    await assert.rejects(S3ObjectStore.open(options), (error: Error & { code?: string; retryable?: boolean }) => {
      assert.equal(error.code, "TRANSFER_FAILED");
      assert.equal(error.retryable, true);
      assert.ok(error.message.includes(own.endpoint), error.message);
      return true;
    });
  } finally {
    if (!stopped) await own.stop();
  }
});
