import { ArmatureError } from "../protocol/errors.js";

/**
 * llama.cpp's sequence state file, as `llama_state_seq_save_file` writes it (llama-context.cpp) and
 * `llama_kv_cache::state_write` / `state_write_meta` / `state_write_data` fill it (llama-kv-cache.cpp):
 *
 * ```text
 * magic u32 ("ggsq") | version u32 (3) | n_tokens u32 | tokens u32[n_tokens]
 * n_stream u32 | per stream: cell_count u32, and when cell_count > 0:
 *   per cell:  pos i32 | n_seq_id u32 | seq_id i32[n_seq_id]
 *   v_trans u32 | n_layer u32
 *   per layer: k_type i32 | k_row_bytes u64 | K rows u8[cell_count × k_row_bytes]
 *   v_trans 0, per layer: v_type i32 | v_row_bytes u64 | V rows u8[cell_count × v_row_bytes]
 *   v_trans 1, per layer: v_type i32 | v_element_bytes u32 | n_embd_v_gqa u32 |
 *                         per element j: u8[cell_count × v_element_bytes] (element j of every cell)
 * ```
 *
 * See docs/decisions/0010-kv-blocks-cut-from-sequence-state.md.
 */
const MAGIC = 0x67677371;
const VERSION = 3;
/** llama.cpp's LLAMA_MAX_SEQ (llama-cparams.h): a context has at most this many streams. */
const MAX_STREAMS = 256;

/** One layer's K and V as the state file stores them; a cell's K is one row, its V one row or one column. */
export interface LayerShape {
  /** ggml type id of the K cache (`k_type`). */
  readonly keyType: number;
  /** Bytes of one cell's K row (`k_row_bytes`). */
  readonly keyRowBytes: number;
  /** ggml type id of the V cache (`v_type`). */
  readonly valueType: number;
  /** Bytes of one cell's V: the row size, or, when V is transposed, valueElementBytes × valueElements. */
  readonly valueRowBytes: number;
  /** V transposed only: bytes of one element (`v_size_el`); 0 otherwise. */
  readonly valueElementBytes: number;
  /** V transposed only: elements per cell (`n_embd_v_gqa`); 0 otherwise. */
  readonly valueElements: number;
}

/** Everything needed to rebuild a state file except its tokens and cells. */
export interface StateShape {
  readonly version: number;
  /** Streams of the saving context (one per sequence unless its KV cache is unified); a load needs its own to be equal. */
  readonly streamCount: number;
  /** The stream that holds the sequence's cells. */
  readonly streamIndex: number;
  /** The sequence id written in every cell (the single-sequence loader discards it and uses its own). */
  readonly sequenceId: number;
  readonly valueTransposed: boolean;
  readonly layers: readonly LayerShape[];
  /** Bytes of one cell over all layers, K and V: a block of B tokens is B × cellBytes. */
  readonly cellBytes: number;
  /**
   * What decides whether two blocks fit together: version, V transposition and every layer's types
   * and sizes (not the stream or sequence the blocks came from). Stable across processes.
   */
  readonly shapeKey: string;
}

/** Where each section of one state file lies. */
export interface SequenceStateLayout {
  readonly shape: StateShape;
  /** Token ids start here (u32 each); there are `cellCount` of them. */
  readonly tokensOffset: number;
  /** KV cells (= tokens) at positions 0..cellCount-1. */
  readonly cellCount: number;
  /** The non-empty stream's cell metadata (`pos, n_seq_id, seq_id`, 12 bytes a cell). */
  readonly cellsOffset: number;
  /** Per layer, the first byte of its K rows. */
  readonly keyOffsets: readonly number[];
  /** Per layer, the first byte of its V rows (or of element 0's column when transposed). */
  readonly valueOffsets: readonly number[];
  readonly totalBytes: number;
}

/**
 * Reads the layout of a single-sequence state file. Refuses, naming what it found, anything it does
 * not understand: `TRANSFER_CORRUPTED` for a wrong magic, truncation, trailing bytes or a field out of
 * range; `NOT_SUPPORTED` for another version, cells in more than one stream, no cells, a cell in other
 * than one sequence, cells not at positions 0..n-1 in order, or a token count unlike the cell count.
 */
export function parseSequenceState(bytes: Buffer): SequenceStateLayout {
  const reader = new Reader(bytes);
  const magic = reader.u32("magic");
  if (magic !== MAGIC) corrupted(`magic is 0x${magic.toString(16)}, not 0x${MAGIC.toString(16)} ("ggsq")`);
  const version = reader.u32("version");
  if (version !== VERSION) {
    unsupported(
      `version ${version}, this reader knows ${VERSION}: llama.cpp changed the layout; update src/kvbm/sequence-state.ts`,
    );
  }
  const tokenCount = reader.u32("n_tokens");
  const tokensOffset = reader.skip(tokenCount * 4, "tokens");
  const streamCount = reader.u32("n_stream");
  if (streamCount < 1 || streamCount > MAX_STREAMS) corrupted(`n_stream is ${streamCount}`);
  let found: StreamRead | undefined;
  for (let stream = 0; stream < streamCount; stream++) {
    const cellCount = reader.u32(`cell_count of stream ${stream}`);
    if (cellCount === 0) continue;
    if (found) unsupported(`cells in streams ${found.streamIndex} and ${stream}; one sequence's state has one stream`);
    found = { streamIndex: stream, cellCount, cells: readCells(reader, cellCount), data: readData(reader, cellCount) };
  }
  if (!found) unsupported("the state holds no KV cells");
  if (reader.offset !== bytes.length) {
    corrupted(
      `${bytes.length - reader.offset} bytes follow the KV data at ${reader.offset} (a second cache, e.g. sliding-window layers?)`,
    );
  }
  const { streamIndex, cellCount, cells, data } = found;
  if (tokenCount !== cellCount) unsupported(`${tokenCount} tokens but ${cellCount} KV cells`);
  const { layers, valueTransposed, keyOffsets, valueOffsets } = data;
  const shape = makeShape({ version, streamCount, streamIndex, sequenceId: cells.sequenceId, valueTransposed, layers });
  return { shape, tokensOffset, cellCount, cellsOffset: cells.offset, keyOffsets, valueOffsets, totalBytes: bytes.length };
}

/** The token ids a parsed state holds. */
export function stateTokens(bytes: Buffer, layout: SequenceStateLayout): number[] {
  return Array.from({ length: layout.cellCount }, (_, i) => bytes.readUInt32LE(layout.tokensOffset + i * 4));
}

/**
 * Copies blocks `fromBlock` (inclusive) to `toBlock` (exclusive) of `blockSize` cells out of a parsed
 * state. A block's payload is, for its cells in position order: every layer's K rows (layer 0 first),
 * then every layer's V rows; with V transposed, per layer, element 0 of its cells, then element 1, ….
 * Only complete blocks: `toBlock` at most ⌊cellCount / blockSize⌋, else `NOT_SUPPORTED`.
 */
export function cutBlocks(
  bytes: Buffer,
  layout: SequenceStateLayout,
  blockSize: number,
  fromBlock: number,
  toBlock: number,
): Buffer[] {
  checkLayout(bytes, layout);
  if (!Number.isInteger(blockSize) || blockSize < 1) unsupported(`block size ${blockSize} is not a positive integer`);
  const complete = Math.floor(layout.cellCount / blockSize);
  if (!Number.isInteger(fromBlock) || !Number.isInteger(toBlock) || fromBlock < 0 || fromBlock > toBlock || toBlock > complete) {
    unsupported(`blocks ${fromBlock}..${toBlock}: the state holds ${complete} complete blocks of ${blockSize} tokens`);
  }
  const blocks: Buffer[] = [];
  for (let block = fromBlock; block < toBlock; block++) {
    blocks.push(copyCells(bytes, layout, block * blockSize, (block + 1) * blockSize));
  }
  return blocks;
}

/**
 * Copies cells `fromCell` (inclusive) to `toCell` (exclusive) out of a parsed state as one payload in
 * the layout of a block (see `cutBlocks`) of `toCell − fromCell` cells: what a partial block, such as
 * a prompt's last, holds. `NOT_SUPPORTED` unless 0 ≤ fromCell < toCell ≤ cellCount.
 */
export function cutCells(bytes: Buffer, layout: SequenceStateLayout, fromCell: number, toCell: number): Buffer {
  checkLayout(bytes, layout);
  if (
    !Number.isInteger(fromCell) ||
    !Number.isInteger(toCell) ||
    fromCell < 0 ||
    fromCell >= toCell ||
    toCell > layout.cellCount
  ) {
    unsupported(`cells ${fromCell}..${toCell}: the state holds ${layout.cellCount} cells`);
  }
  return copyCells(bytes, layout, fromCell, toCell);
}

function checkLayout(bytes: Buffer, layout: SequenceStateLayout): void {
  if (bytes.length !== layout.totalBytes) {
    unsupported(`the layout is of a ${layout.totalBytes}-byte state, not ${bytes.length} bytes`);
  }
}

/** One payload in block layout for cells `first`..`end` (exclusive), bounds already checked. */
function copyCells(bytes: Buffer, layout: SequenceStateLayout, first: number, end: number): Buffer {
  const { shape, cellCount } = layout;
  const cells = end - first;
  const out = Buffer.allocUnsafe(cells * shape.cellBytes);
  let at = 0;
  for (const [l, layer] of shape.layers.entries()) {
    const start = layout.keyOffsets[l]! + first * layer.keyRowBytes;
    at += bytes.copy(out, at, start, start + cells * layer.keyRowBytes);
  }
  for (const [l, layer] of shape.layers.entries()) {
    if (!shape.valueTransposed) {
      const start = layout.valueOffsets[l]! + first * layer.valueRowBytes;
      at += bytes.copy(out, at, start, start + cells * layer.valueRowBytes);
      continue;
    }
    const size = layer.valueElementBytes;
    for (let element = 0; element < layer.valueElements; element++) {
      const start = layout.valueOffsets[l]! + (element * cellCount + first) * size;
      at += bytes.copy(out, at, start, start + cells * size);
    }
  }
  return out;
}

/**
 * Builds the state file of `tokens` from blocks that `cutBlocks` made for states of `shape`: cells at
 * positions 0..n-1 in `shape.streamIndex`, each in `shape.sequenceId` (what a single-sequence save
 * writes; the loader puts them in the sequence it loads into). Every block holds the same B cells but
 * the last, which may hold fewer (a partial block that `cutCells` made); `tokens.length` must be the
 * cells they hold together, else `NOT_SUPPORTED`. One allocation, one copy.
 */
export function assembleState(shape: StateShape, tokens: readonly number[], blocks: readonly Buffer[]): Buffer {
  const blockBytes = blocks[0]?.length ?? 0;
  const lastBytes = blocks.at(-1)?.length ?? 0;
  const whole = (length: number): boolean => length > 0 && length % shape.cellBytes === 0;
  if (
    !whole(blockBytes) ||
    !whole(lastBytes) ||
    lastBytes > blockBytes ||
    blocks.some((b, i) => i < blocks.length - 1 && b.length !== blockBytes)
  ) {
    unsupported(
      `blocks of ${blocks.map((b) => b.length).join(", ") || "none"} bytes are not whole blocks of ${shape.cellBytes}-byte cells`,
    );
  }
  const blockSize = blockBytes / shape.cellBytes;
  const cellsOf = blocks.map((b) => b.length / shape.cellBytes);
  const n = cellsOf.reduce((sum, cells) => sum + cells, 0);
  if (tokens.length !== n) {
    const partial = lastBytes < blockBytes ? ` (the last of ${lastBytes / shape.cellBytes})` : "";
    unsupported(`${tokens.length} tokens for ${blocks.length} blocks of ${blockSize}${partial}`);
  }
  if (shape.streamIndex >= shape.streamCount) unsupported(`stream ${shape.streamIndex} of ${shape.streamCount}`);
  const out = Buffer.allocUnsafe(stateBytes(shape, n));
  let at = out.writeUInt32LE(MAGIC, 0);
  at = out.writeUInt32LE(shape.version, at);
  at = out.writeUInt32LE(n, at);
  for (const token of tokens) at = out.writeUInt32LE(token, at);
  at = out.writeUInt32LE(shape.streamCount, at);
  for (let stream = 0; stream < shape.streamIndex; stream++) at = out.writeUInt32LE(0, at);
  at = out.writeUInt32LE(n, at);
  for (let pos = 0; pos < n; pos++) {
    at = out.writeInt32LE(pos, at);
    at = out.writeUInt32LE(1, at);
    at = out.writeInt32LE(shape.sequenceId, at);
  }
  at = out.writeUInt32LE(shape.valueTransposed ? 1 : 0, at);
  at = out.writeUInt32LE(shape.layers.length, at);
  // A section (one layer's K, say) starts in every block at its cell count × the bytes per cell of the sections before it.
  let before = 0;
  const section = (cellBytes: number): void => {
    at = copySection(blocks, cellsOf, before, cellBytes, out, at);
    before += cellBytes;
  };
  for (const layer of shape.layers) {
    at = out.writeInt32LE(layer.keyType, at);
    at = out.writeBigUInt64LE(BigInt(layer.keyRowBytes), at);
    section(layer.keyRowBytes);
  }
  for (const layer of shape.layers) {
    at = out.writeInt32LE(layer.valueType, at);
    if (!shape.valueTransposed) {
      at = out.writeBigUInt64LE(BigInt(layer.valueRowBytes), at);
      section(layer.valueRowBytes);
      continue;
    }
    at = out.writeUInt32LE(layer.valueElementBytes, at);
    at = out.writeUInt32LE(layer.valueElements, at);
    for (let element = 0; element < layer.valueElements; element++) section(layer.valueElementBytes);
  }
  for (let stream = shape.streamIndex + 1; stream < shape.streamCount; stream++) at = out.writeUInt32LE(0, at);
  return out;
}

/** Bytes of the state file of `n` cells of `shape`. */
function stateBytes(shape: StateShape, n: number): number {
  const layerHeaders = shape.layers.length * 2 * 12;
  return 12 + 4 * n + 4 + 4 * shape.streamCount + 12 * n + 8 + layerHeaders + n * shape.cellBytes;
}

/**
 * Copies the same section of every block, in block order: in a block of c cells it starts at
 * c × `beforeCellBytes` and is c × `cellBytes` long.
 */
function copySection(
  blocks: readonly Buffer[],
  cellsOf: readonly number[],
  beforeCellBytes: number,
  cellBytes: number,
  out: Buffer,
  at: number,
): number {
  let end = at;
  for (const [i, block] of blocks.entries()) {
    const cells = cellsOf[i] as number;
    end += block.copy(out, end, cells * beforeCellBytes, cells * (beforeCellBytes + cellBytes));
  }
  return end;
}

interface StreamRead {
  readonly streamIndex: number;
  readonly cellCount: number;
  readonly cells: CellsRead;
  readonly data: DataRead;
}

interface CellsRead {
  readonly offset: number;
  readonly sequenceId: number;
}

function readCells(reader: Reader, cellCount: number): CellsRead {
  const offset = reader.offset;
  let sequenceId = 0;
  for (let cell = 0; cell < cellCount; cell++) {
    const pos = reader.i32(`pos of cell ${cell}`);
    const seqIds = reader.u32(`n_seq_id of cell ${cell}`);
    if (seqIds !== 1) unsupported(`cell ${cell} belongs to ${seqIds} sequences, not one`);
    const seqId = reader.i32(`seq_id of cell ${cell}`);
    if (cell === 0) sequenceId = seqId;
    if (pos !== cell) unsupported(`cell ${cell} holds position ${pos}: cells must hold positions 0..${cellCount - 1} in order`);
    if (seqId < 0 || seqId >= MAX_STREAMS) corrupted(`cell ${cell} is in sequence ${seqId}`);
    if (seqId !== sequenceId) unsupported(`cell ${cell} is in sequence ${seqId}, cell 0 in ${sequenceId}`);
  }
  return { offset, sequenceId };
}

type DataRead = Pick<SequenceStateLayout, "keyOffsets" | "valueOffsets"> & {
  readonly valueTransposed: boolean;
  readonly layers: LayerShape[];
};

function readData(reader: Reader, cellCount: number): DataRead {
  const transposed = reader.u32("v_trans");
  if (transposed > 1) corrupted(`v_trans is ${transposed}`);
  const layerCount = reader.u32("n_layer");
  if (layerCount < 1) corrupted("n_layer is 0");
  const keys: { type: number; rowBytes: number }[] = [];
  const keyOffsets: number[] = [];
  for (let l = 0; l < layerCount; l++) {
    const type = reader.i32(`k_type of layer ${l}`);
    const rowBytes = reader.u64(`k_row_bytes of layer ${l}`);
    keys.push({ type, rowBytes });
    keyOffsets.push(reader.skip(cellCount * rowBytes, `K rows of layer ${l}`));
  }
  const layers: LayerShape[] = [];
  const valueOffsets: number[] = [];
  for (const [l, key] of keys.entries()) {
    const valueType = reader.i32(`v_type of layer ${l}`);
    let valueElementBytes = 0;
    let valueElements = 0;
    let valueRowBytes: number;
    if (transposed) {
      valueElementBytes = reader.u32(`v_element_bytes of layer ${l}`);
      valueElements = reader.u32(`n_embd_v_gqa of layer ${l}`);
      valueRowBytes = valueElementBytes * valueElements;
      if (valueRowBytes === 0) corrupted(`layer ${l} has ${valueElements} V elements of ${valueElementBytes} bytes`);
    } else {
      valueRowBytes = reader.u64(`v_row_bytes of layer ${l}`);
    }
    valueOffsets.push(reader.skip(cellCount * valueRowBytes, `V of layer ${l}`));
    layers.push({ keyType: key.type, keyRowBytes: key.rowBytes, valueType, valueRowBytes, valueElementBytes, valueElements });
  }
  return { valueTransposed: transposed === 1, layers, keyOffsets, valueOffsets };
}

function makeShape(fields: Omit<StateShape, "cellBytes" | "shapeKey">): StateShape {
  const cellBytes = fields.layers.reduce((sum, layer) => sum + layer.keyRowBytes + layer.valueRowBytes, 0);
  const layerKeys = fields.layers.map((layer) => {
    const value = fields.valueTransposed ? `${layer.valueElementBytes}x${layer.valueElements}` : `${layer.valueRowBytes}`;
    return `k${layer.keyType}:${layer.keyRowBytes},v${layer.valueType}:${value}`;
  });
  const shapeKey = `ggsq${fields.version}/vt${fields.valueTransposed ? 1 : 0}/${layerKeys.join("/")}`;
  return { ...fields, cellBytes, shapeKey };
}

/** Bounds-checked little-endian reads; running past the end is truncation. */
class Reader {
  offset = 0;
  readonly #bytes: Buffer;

  constructor(bytes: Buffer) {
    this.#bytes = bytes;
  }

  /** Skips `length` bytes and returns where they start. */
  skip(length: number, what: string): number {
    const start = this.offset;
    if (!Number.isSafeInteger(length) || start + length > this.#bytes.length) {
      corrupted(`truncated: ${what} needs ${length} bytes at ${start}, the state has ${this.#bytes.length}`);
    }
    this.offset += length;
    return start;
  }

  u32(what: string): number {
    return this.#bytes.readUInt32LE(this.skip(4, what));
  }

  i32(what: string): number {
    return this.#bytes.readInt32LE(this.skip(4, what));
  }

  u64(what: string): number {
    const value = this.#bytes.readBigUInt64LE(this.skip(8, what));
    if (value < 1n || value > BigInt(Number.MAX_SAFE_INTEGER)) corrupted(`${what} is ${value}`);
    return Number(value);
  }
}

function corrupted(what: string): never {
  throw new ArmatureError("TRANSFER_CORRUPTED", `not a llama.cpp sequence state this reader understands: ${what}`);
}

function unsupported(what: string): never {
  throw new ArmatureError("NOT_SUPPORTED", `llama.cpp sequence state not supported: ${what}`);
}
