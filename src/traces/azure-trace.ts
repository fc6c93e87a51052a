import { readFile, writeFile } from "node:fs/promises";
import { ArmatureError } from "../protocol/index.js";
import type { TraceRequest } from "../sim/index.js";
import { blockCount, formatMooncakeTrace, MOONCAKE_BLOCK_SIZE } from "./mooncake-jsonl.js";

/** How an Azure trace becomes hash ids. The CLI flag that sets each field is named in brackets. */
export interface AzureConversionOptions {
  /** [--block-size] Tokens per hash id. Default 512, Mooncake's. */
  readonly blockSize?: number;
  /**
   * [--system-blocks] A synthetic shared prefix: the first n full blocks of every prompt get the ids
   * 0 … n−1, the same in every request. Default 0: no two requests share a block.
   */
  readonly systemBlocks?: number;
}

/** One row of an Azure LLM inference trace. */
export interface AzureTraceRow {
  /** Arrival, whole seconds since the Unix epoch, reading the CSV's local time as UTC (only differences matter). */
  readonly epochSeconds: number;
  /** Arrival, nanoseconds past `epochSeconds` (kept apart: nanoseconds since the epoch exceed 2⁵³). */
  readonly nanoseconds: number;
  readonly contextTokens: number;
  readonly generatedTokens: number;
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?$/;

/**
 * Reads the CSV of the Azure LLM inference traces (2023: `TIMESTAMP,ContextTokens,GeneratedTokens`,
 * timestamps like `2023-11-16 18:17:03.9799600`; a `Z` or `+hh:mm` suffix is honoured). Columns are found
 * by header name, in any case and order.
 * @throws ArmatureError CONFIG_INVALID naming `source` and the line of a missing column or a bad value.
 */
export function parseAzureCsv(text: string, source: string): AzureTraceRow[] {
  const lines = text.split(/\r?\n/);
  const header = (lines[0] ?? "").split(",").map((name) => name.trim().toLowerCase());
  const column = (name: string): number => {
    const index = header.indexOf(name.toLowerCase());
    if (index < 0) {
      throw new ArmatureError(
        "CONFIG_INVALID",
        `${source}: no ${name} column; an Azure trace has TIMESTAMP,ContextTokens,GeneratedTokens`,
      );
    }
    return index;
  };
  const [time, context, generated] = [column("TIMESTAMP"), column("ContextTokens"), column("GeneratedTokens")];
  const rows: AzureTraceRow[] = [];
  lines.forEach((line, i) => {
    if (i === 0 || line.trim() === "") return;
    const fields = line.split(",");
    const where = `${source}:${i + 1}`;
    rows.push({
      ...parseTimestamp(fields[time], where),
      contextTokens: parseCount(fields[context], 1, "ContextTokens", where),
      generatedTokens: parseCount(fields[generated], 0, "GeneratedTokens", where),
    });
  });
  return rows;
}

/**
 * Turns Azure rows into Mooncake requests. Rows are put in time order (stable); timestamps are whole
 * ms from the earliest row, rounded to the nearest ms; `input_length` is ContextTokens, `output_length`
 * GeneratedTokens.
 *
 * Azure's traces carry no content, so the hash ids say nothing real about shared prompts: each request
 * gets ⌈input ÷ blockSize⌉ ids, new ones counting up from 0 (or from `systemBlocks`) in row order, so no
 * two requests share a block. With `systemBlocks` n, the first min(n, ⌊input ÷ blockSize⌋) ids of every
 * request are 0 … n−1, a system prompt all requests share; a prompt shorter than the system prompt
 * shares only its full blocks of it.
 * @throws ArmatureError CONFIG_INVALID naming `--block-size` or `--system-blocks` for a bad value.
 */
export function azureRowsToTrace(rows: readonly AzureTraceRow[], options: AzureConversionOptions = {}): TraceRequest[] {
  const blockSize = options.blockSize ?? MOONCAKE_BLOCK_SIZE;
  const systemBlocks = options.systemBlocks ?? 0;
  if (!Number.isInteger(blockSize) || blockSize < 1) {
    throw new ArmatureError("CONFIG_INVALID", `--block-size must be a whole number ≥ 1, got ${blockSize}`, {
      param: "--block-size",
    });
  }
  if (!Number.isInteger(systemBlocks) || systemBlocks < 0) {
    throw new ArmatureError("CONFIG_INVALID", `--system-blocks must be a whole number ≥ 0, got ${systemBlocks}`, {
      param: "--system-blocks",
    });
  }
  const ordered = [...rows].sort((a, b) => a.epochSeconds - b.epochSeconds || a.nanoseconds - b.nanoseconds);
  const start = ordered[0];
  let nextId = systemBlocks;
  return ordered.map((row) => {
    const blocks = blockCount(row.contextTokens, blockSize);
    const shared = Math.min(systemBlocks, Math.floor(row.contextTokens / blockSize));
    const hashIds = Array.from({ length: blocks }, (_, i) => (i < shared ? i : nextId++));
    return {
      timestamp: start === undefined ? 0 : millisecondsBetween(start, row),
      inputLength: row.contextTokens,
      outputLength: row.generatedTokens,
      hashIds,
    };
  });
}

/** Reads an Azure CSV at `inputPath`, converts it (`azureRowsToTrace`) and writes Mooncake JSONL to `outputPath`. */
export async function convertAzureTrace(
  inputPath: string,
  outputPath: string,
  options: AzureConversionOptions = {},
): Promise<TraceRequest[]> {
  const requests = azureRowsToTrace(parseAzureCsv(await readFile(inputPath, "utf8"), inputPath), options);
  await writeFile(outputPath, formatMooncakeTrace(requests));
  return requests;
}

/** Whole ms from `start` to `row`, rounded to nearest; exact while they are under 104 days (2⁵³ ns) apart. */
function millisecondsBetween(start: AzureTraceRow, row: AzureTraceRow): number {
  const nanoseconds = (row.epochSeconds - start.epochSeconds) * 1e9 + (row.nanoseconds - start.nanoseconds);
  return Math.round(nanoseconds / 1e6);
}

function parseTimestamp(field: string | undefined, where: string): Pick<AzureTraceRow, "epochSeconds" | "nanoseconds"> {
  const match = TIMESTAMP.exec((field ?? "").trim());
  if (!match) {
    throw new ArmatureError(
      "CONFIG_INVALID",
      `${where}: TIMESTAMP must look like 2023-11-16 18:17:03.9799600, got '${field ?? ""}'`,
    );
  }
  const [, year, month, day, hour, minute, second, fraction = "", zone] = match;
  const seconds = Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second)) / 1000;
  return { epochSeconds: seconds - zoneOffsetSeconds(zone), nanoseconds: Number(fraction.padEnd(9, "0")) };
}

function zoneOffsetSeconds(zone: string | undefined): number {
  if (zone === undefined || zone === "Z") return 0;
  const digits = zone.replace(":", "");
  const minutes = Number(digits.slice(1, 3)) * 60 + Number(digits.slice(3, 5));
  return (digits.startsWith("-") ? -60 : 60) * minutes;
}

function parseCount(field: string | undefined, min: number, name: string, where: string): number {
  const value = Number((field ?? "").trim());
  if (field === undefined || field.trim() === "" || !Number.isInteger(value) || value < min) {
    throw new ArmatureError("CONFIG_INVALID", `${where}: ${name} must be a whole number ≥ ${min}, got '${field ?? ""}'`);
  }
  return value;
}
