import assert from "node:assert/strict";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { DirectoryObjectStore, MemoryObjectStore } from "../../transfer/index.js";
import type { BatchObject } from "./batch-objects.js";
import { type BatchStore, newBatchId } from "./batch-store.js";
import { DirectoryBatchStore } from "./directory-batch-store.js";
import { ObjectBatchStore, type RunnerLock } from "./object-batch-store.js";

// The same behaviours of every place batches live: a folder (--batch-dir) and an object store (the
// KV block manager's), the latter in memory and as files, each reopened as a restarted process would.

/** A runner lock as discovery's claim behaves: one holder at a time, free again once released. */
function sharedLock(): () => RunnerLock {
  let holder: number | undefined;
  let next = 0;
  return () => {
    const me = next++;
    return {
      acquire: async () => {
        holder ??= me;
        return holder === me;
      },
      release: async () => {
        if (holder === me) holder = undefined;
      },
    };
  };
}

const places: [string, () => Promise<() => Promise<BatchStore>>][] = [
  [
    "a folder",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "armature-batch-store-"));
      return () => DirectoryBatchStore.open(dir);
    },
  ],
  [
    "an object store in memory",
    async () => {
      const store = new MemoryObjectStore();
      const lock = sharedLock();
      return async () => new ObjectBatchStore(store, lock());
    },
  ],
  [
    "an object store as files",
    async () => {
      const root = await mkdtemp(join(tmpdir(), "armature-batch-objects-"));
      const lock = sharedLock();
      return async () => new ObjectBatchStore(await DirectoryObjectStore.open(root), lock());
    },
  ],
];

function batchObject(id: string, createdAt: number): BatchObject {
  return {
    id,
    object: "batch",
    endpoint: "/v1/completions",
    errors: null,
    input_file_id: "file-000000000000000000000000",
    completion_window: "24h",
    status: "in_progress",
    output_file_id: null,
    error_file_id: null,
    created_at: createdAt,
    in_progress_at: null,
    expires_at: null,
    finalizing_at: null,
    completed_at: null,
    failed_at: null,
    expired_at: null,
    cancelling_at: null,
    cancelled_at: null,
    request_counts: { total: 3, completed: 0, failed: 0 },
    metadata: null,
  } as BatchObject;
}

for (const [name, place] of places) {
  test(`${name}: files are stored with their owner, read back, listed and deleted`, async () => {
    const open = await place();
    const store = await open();
    const file = await store.addFile(Buffer.from('{"a":1}\n'), "in.jsonl", "batch", "alice");
    assert.match(file.id, /^file-[0-9a-f]{24}$/);
    assert.equal(file.bytes, 8);
    const again = await open();
    assert.deepEqual(await again.file(file.id), { file, owner: "alice" });
    assert.equal((await again.fileContent(file.id)).toString(), '{"a":1}\n');
    assert.deepEqual(
      (await again.listFiles()).map((f) => f.file.id),
      [file.id],
    );
    assert.equal(await again.file("file-nothere"), undefined);
    await again.deleteFile(file.id);
    assert.equal(await again.file(file.id), undefined);
    assert.deepEqual(await again.listFiles(), []);
  });

  test(`${name}: a batch is replaced whole on each save and listed newest first`, async () => {
    const open = await place();
    const store = await open();
    const older = batchObject(newBatchId(), 100);
    const newer = batchObject(newBatchId(), 200);
    await store.saveBatch({ batch: older, owner: null });
    await store.saveBatch({ batch: newer, owner: null });
    const done = { ...older, status: "completed", request_counts: { total: 3, completed: 3, failed: 0 } } as BatchObject;
    await store.saveBatch({ batch: done, owner: null });
    const again = await open();
    assert.deepEqual(await again.batch(older.id), { batch: done, owner: null });
    assert.deepEqual(
      (await again.listBatches()).map((b) => b.batch.id),
      [newer.id, older.id],
    );
    assert.equal(await again.batch("batch_nothere"), undefined);
  });

  test(`${name}: results append in order, survive a restart, and become one file each kind`, async () => {
    const open = await place();
    const store = await open();
    const id = newBatchId();
    await store.appendResults(id, "output", '{"n":1}\n');
    await store.appendResults(id, "errors", '{"e":1}\n');
    await store.appendResults(id, "output", '{"n":2}\n{"n":3}\n');
    const again = await open();
    assert.deepEqual(await again.results(id, "output"), ['{"n":1}', '{"n":2}', '{"n":3}']);
    await again.appendResults(id, "output", '{"n":4}\n');
    assert.deepEqual(await again.results(id, "output"), ['{"n":1}', '{"n":2}', '{"n":3}', '{"n":4}']);
    const output = await again.promoteResults(id, "output", "bob");
    assert.equal(output?.purpose, "batch_output");
    assert.equal(output?.filename, `${id}_output.jsonl`);
    assert.equal((await again.fileContent(output?.id as string)).toString(), '{"n":1}\n{"n":2}\n{"n":3}\n{"n":4}\n');
    assert.equal((await again.file(output?.id as string))?.owner, "bob");
    assert.deepEqual(await again.results(id, "output"), [], "promoted results are no longer the batch's");
    await again.clearResults(id);
    assert.deepEqual(await again.results(id, "errors"), []);
    assert.equal(await again.promoteResults(id, "errors", null), undefined, "no results, no file");
  });

  test(`${name}: results appended at once, as a runner with several requests in flight appends them, all stay`, async () => {
    const open = await place();
    const id = newBatchId();
    await (await open()).appendResults(id, "output", "first\n");
    const store = await open();
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.appendResults(id, "output", `line ${i}\n`)));
    const lines = await store.results(id, "output");
    assert.equal(lines[0], "first");
    assert.deepEqual(new Set(lines.slice(1)), new Set(Array.from({ length: 20 }, (_, i) => `line ${i}`)));
  });

  test(`${name}: one process at a time holds the runner lock`, async () => {
    const open = await place();
    const first = await open();
    const second = await open();
    assert.equal(await first.acquireRunnerLock(), true);
    if (name === "a folder") return; // one process here: the folder's lock is by pid, and this process holds it
    assert.equal(await second.acquireRunnerLock(), false);
    await first.releaseRunnerLock();
    assert.equal(await second.acquireRunnerLock(), true);
  });
}

test("a result piece a killed process left to land after the resume read them: its request's first line is the file's", async () => {
  const objects = new MemoryObjectStore();
  const store = new ObjectBatchStore(objects, sharedLock()());
  const id = newBatchId();
  const line = (request: string, text: string) => `${JSON.stringify({ id: request, response: { body: text } })}\n`;
  await store.appendResults(id, "output", line("r-1", "first run"));
  await store.appendResults(id, "output", line("r-2", "resumed"));
  // r-1 ran again after the resume (its first piece was not yet there when the results were read),
  // and that piece lands after.
  await store.appendResults(id, "output", line("r-1", "run again"));
  await store.appendResults(id, "output", '{"no-id":true}\n{"no-id":true}\n');
  const file = await store.promoteResults(id, "output", null);
  const expected = `${line("r-1", "first run")}${line("r-2", "resumed")}{"no-id":true}\n{"no-id":true}\n`;
  assert.equal((await store.fileContent(file?.id as string)).toString(), expected);
  assert.equal(file?.bytes, Buffer.byteLength(expected));
});
