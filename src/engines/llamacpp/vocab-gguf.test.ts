import assert from "node:assert/strict";
import { mkdtemp, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { readGgufFileInfo } from "node-llama-cpp";
import { buildTinyModel } from "../tiny-model/tiny-model.js";
import { bundleHash, installedTokenizer, installTokenizerBundle, readTokenizerBundle } from "../tokenizer-bundle.js";
import { GgufTokenizer } from "./gguf-tokenizer.js";
import { vocabOnlyGguf } from "./vocab-gguf.js";

test("a GGUF without its tensors keeps every metadata key and tokenizes as the whole model", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-vocab-"));
  const model = join(dir, "small.gguf");
  await writeFile(model, buildTinyModel({ embeddingLength: 256, layers: 6, heads: 8, feedForwardLength: 1024 }));
  const vocab = join(dir, "vocab.gguf");
  await writeFile(vocab, await vocabOnlyGguf(model));
  const [whole, part] = [await readGgufFileInfo(model), await readGgufFileInfo(vocab)];
  assert.deepEqual(part.metadata, whole.metadata);
  assert.equal(part.tensorInfo?.length ?? 0, 0);
  assert.ok((await stat(vocab)).size < (await stat(model)).size / 10, "the vocabulary is a small part of the file");
  const [a, b] = [await GgufTokenizer.load(model), await GgufTokenizer.load(vocab)];
  const text = "<|im_start|>user\nHello, world! 12345 ñandú<|im_end|>";
  assert.deepEqual(b.encode(text, { special: true }), a.encode(text, { special: true }));
  assert.equal(b.decode(a.encode(text)), a.decode(a.encode(text)));
});

test("files that are not a GGUF, or end inside the metadata, are refused", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-vocab-"));
  await writeFile(join(dir, "x.gguf"), "not a model at all, just text");
  await assert.rejects(vocabOnlyGguf(join(dir, "x.gguf")), /is not a GGUF file/);
  await writeFile(join(dir, "cut.gguf"), buildTinyModel().subarray(0, 4000));
  await assert.rejects(vocabOnlyGguf(join(dir, "cut.gguf")), /ends inside its metadata/);
});

test("a bundle installs under its hash; one whose bytes or names do not match is refused", async () => {
  const dir = await mkdtemp(join(tmpdir(), "armature-bundle-"));
  await writeFile(join(dir, "m.gguf"), buildTinyModel());
  const source = { kind: "gguf" as const, path: join(dir, "m.gguf") };
  const bundle = await readTokenizerBundle(source);
  assert.ok(bundle);
  assert.equal(bundle.sha256, bundleHash(bundle.files));
  const cache = join(dir, "cache");
  assert.equal(installedTokenizer(cache, { ...source, sha256: bundle.sha256 }), undefined);
  const local = await installTokenizerBundle(cache, { ...source, sha256: bundle.sha256 }, bundle);
  assert.deepEqual(local, { kind: "gguf", path: join(cache, bundle.sha256, "vocab.gguf"), sha256: bundle.sha256 });
  assert.deepEqual(installedTokenizer(cache, { ...source, sha256: bundle.sha256 }), local);
  const file = bundle.files[0] as { name: string; bytes: Buffer };
  const tampered = { sha256: bundle.sha256, files: [{ name: file.name, bytes: Buffer.concat([file.bytes, Buffer.from([0])]) }] };
  await assert.rejects(installTokenizerBundle(cache, source, tampered), /hash to [0-9a-f]{64}, not/);
  const renamed = [{ name: "../evil", bytes: file.bytes }];
  await assert.rejects(installTokenizerBundle(cache, source, { sha256: bundleHash(renamed), files: renamed }), /may not hold/);
});
