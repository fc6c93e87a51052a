/**
 * Writes GGUF v3 files (the llama.cpp model format): header, typed metadata, tensor infos,
 * 32-byte aligned F32 tensor data.
 */

const GGUF_MAGIC = 0x46554747; // "GGUF" read as little-endian u32
const GGUF_VERSION = 3;
const ALIGNMENT = 32;
const GGML_TYPE_F32 = 0;

const ValueType = {
  uint32: 4,
  int32: 5,
  float32: 6,
  bool: 7,
  string: 8,
  array: 9,
} as const;

export type MetadataValue =
  | { readonly type: "uint32"; readonly value: number }
  | { readonly type: "int32"; readonly value: number }
  | { readonly type: "float32"; readonly value: number }
  | { readonly type: "bool"; readonly value: boolean }
  | { readonly type: "string"; readonly value: string }
  | { readonly type: "string[]"; readonly value: readonly string[] }
  | { readonly type: "int32[]"; readonly value: readonly number[] };

export interface TensorSpec {
  readonly name: string;
  /** ggml order: the fastest-varying dimension first. */
  readonly dims: readonly number[];
  readonly data: Float32Array;
}

class ByteSink {
  readonly chunks: Buffer[] = [];
  length = 0;

  push(buffer: Buffer): void {
    this.chunks.push(buffer);
    this.length += buffer.length;
  }

  u32(v: number): void {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32LE(v >>> 0);
    this.push(b);
  }

  i32(v: number): void {
    const b = Buffer.allocUnsafe(4);
    b.writeInt32LE(v);
    this.push(b);
  }

  u64(v: number): void {
    const b = Buffer.allocUnsafe(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }

  f32(v: number): void {
    const b = Buffer.allocUnsafe(4);
    b.writeFloatLE(v);
    this.push(b);
  }

  string(s: string): void {
    const bytes = Buffer.from(s, "utf8");
    this.u64(bytes.length);
    this.push(bytes);
  }

  pad(): void {
    const rest = this.length % ALIGNMENT;
    if (rest !== 0) this.push(Buffer.alloc(ALIGNMENT - rest));
  }
}

function writeValue(sink: ByteSink, value: MetadataValue): void {
  switch (value.type) {
    case "uint32":
      sink.u32(ValueType.uint32);
      sink.u32(value.value);
      return;
    case "int32":
      sink.u32(ValueType.int32);
      sink.i32(value.value);
      return;
    case "float32":
      sink.u32(ValueType.float32);
      sink.f32(value.value);
      return;
    case "bool":
      sink.u32(ValueType.bool);
      sink.push(Buffer.from([value.value ? 1 : 0]));
      return;
    case "string":
      sink.u32(ValueType.string);
      sink.string(value.value);
      return;
    case "string[]":
      sink.u32(ValueType.array);
      sink.u32(ValueType.string);
      sink.u64(value.value.length);
      for (const s of value.value) sink.string(s);
      return;
    case "int32[]":
      sink.u32(ValueType.array);
      sink.u32(ValueType.int32);
      sink.u64(value.value.length);
      for (const n of value.value) sink.i32(n);
      return;
  }
}

/** Serialises metadata and tensors into one GGUF buffer. */
export function encodeGguf(metadata: ReadonlyMap<string, MetadataValue>, tensors: readonly TensorSpec[]): Buffer {
  const head = new ByteSink();
  head.u32(GGUF_MAGIC);
  head.u32(GGUF_VERSION);
  head.u64(tensors.length);
  head.u64(metadata.size);
  for (const [key, value] of metadata) {
    head.string(key);
    writeValue(head, value);
  }
  let offset = 0;
  for (const tensor of tensors) {
    const count = tensor.dims.reduce((a, b) => a * b, 1);
    if (count !== tensor.data.length) {
      throw new Error(`tensor ${tensor.name}: dims hold ${count} values, data has ${tensor.data.length}`);
    }
    head.string(tensor.name);
    head.u32(tensor.dims.length);
    for (const d of tensor.dims) head.u64(d);
    head.u32(GGML_TYPE_F32);
    head.u64(offset);
    offset += Math.ceil((count * 4) / ALIGNMENT) * ALIGNMENT;
  }
  head.pad();
  for (const tensor of tensors) {
    head.push(Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength));
    head.pad();
  }
  return Buffer.concat(head.chunks, head.length);
}
