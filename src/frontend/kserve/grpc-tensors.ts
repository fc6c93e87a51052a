import { ArmatureError } from "../../protocol/index.js";
import { type InferFields, type InputTensor, invalidKserve, type OutputName, type ParameterValue } from "./llm-request.js";

/**
 * Messages of `inference.GRPCInferenceService` as `@grpc/proto-loader` gives them with
 * `keepCase`, `defaults`, `oneofs` and `longs: Number`: field names as in the proto, unset fields
 * at their defaults, bytes as Buffers.
 */
export interface GrpcParameter {
  readonly parameter_choice?: "bool_param" | "int64_param" | "string_param" | "double_param" | "uint64_param";
  readonly bool_param?: boolean;
  readonly int64_param?: number;
  readonly string_param?: string;
  readonly double_param?: number;
  readonly uint64_param?: number;
}

export interface GrpcTensorContents {
  readonly bool_contents: readonly boolean[];
  readonly int_contents: readonly number[];
  readonly int64_contents: readonly number[];
  readonly uint_contents: readonly number[];
  readonly uint64_contents: readonly number[];
  readonly fp32_contents: readonly number[];
  readonly fp64_contents: readonly number[];
  readonly bytes_contents: readonly Buffer[];
}

export interface GrpcInferRequest {
  readonly model_name: string;
  readonly model_version: string;
  readonly id: string;
  readonly parameters: Readonly<Record<string, GrpcParameter>>;
  readonly inputs: readonly {
    readonly name: string;
    readonly datatype: string;
    readonly shape: readonly number[];
    readonly parameters: Readonly<Record<string, GrpcParameter>>;
    readonly contents: GrpcTensorContents | null;
  }[];
  readonly outputs: readonly { readonly name: string; readonly parameters: Readonly<Record<string, GrpcParameter>> }[];
  readonly raw_input_contents: readonly Buffer[];
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** `ModelInferRequest` → the fields of a request; tensor data from `contents` or `raw_input_contents`, either. */
export function grpcInferFields(request: GrpcInferRequest): InferFields {
  const raw = request.raw_input_contents;
  if (raw.length > 0) {
    if (raw.length !== request.inputs.length) {
      throw invalidKserve(
        "raw_input_contents",
        `'raw_input_contents' has ${raw.length} entries for ${request.inputs.length} inputs; with raw contents every input needs one, in order`,
      );
    }
    const both = request.inputs.find((input) => input.contents !== null);
    if (both) {
      throw invalidKserve(
        `inputs.${both.name}.contents`,
        `input '${both.name}' has 'contents' although 'raw_input_contents' is used; the protocol allows one or the other`,
      );
    }
  }
  return {
    id: request.id === "" ? undefined : request.id,
    parameters: parameterValues(request.parameters, "parameters"),
    inputs: request.inputs.map(
      (input, index): InputTensor => ({
        name: input.name,
        datatype: input.datatype,
        shape: input.shape,
        elements: raw.length > 0 ? rawElements(input.name, input.datatype, raw[index] as Buffer) : contentElements(input),
        parameters: parameterValues(input.parameters, `inputs.${input.name}.parameters`),
      }),
    ),
    outputs: request.outputs.map((output) => ({
      name: output.name,
      parameters: parameterValues(output.parameters, `outputs.${output.name}.parameters`),
    })),
  };
}

/** One BYTES output tensor of one string, in `contents.bytes_contents`. */
export function grpcOutput(name: OutputName, value: string): Record<string, unknown> {
  return { name, datatype: "BYTES", shape: [1], parameters: {}, contents: { bytes_contents: [Buffer.from(value, "utf8")] } };
}

function contentElements(input: GrpcInferRequest["inputs"][number]): unknown[] {
  const contents = input.contents;
  if (contents === null) return [];
  if (input.datatype === "BYTES") return contents.bytes_contents.map((bytes) => text(input.name, bytes));
  if (input.datatype === "BOOL") return [...contents.bool_contents];
  for (const values of [
    contents.int_contents,
    contents.int64_contents,
    contents.uint_contents,
    contents.uint64_contents,
    contents.fp32_contents,
    contents.fp64_contents,
  ]) {
    if (values.length > 0) return [...values];
  }
  return [];
}

/** Raw tensor bytes: BYTES elements each behind a 4-byte little-endian length (Triton's layout), BOOL one byte each. */
function rawElements(name: string, datatype: string, bytes: Buffer): unknown[] {
  if (datatype === "BOOL") return [...bytes].map((b) => b !== 0);
  if (datatype !== "BYTES") return [];
  const elements: string[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    if (offset + 4 > bytes.length) break;
    const length = bytes.readUInt32LE(offset);
    offset += 4;
    if (offset + length > bytes.length) {
      throw invalidKserve(
        `inputs.${name}`,
        `input '${name}' raw contents are cut short: an element says ${length} bytes but ${bytes.length - offset} remain (each BYTES element is a 4-byte little-endian length, then the bytes)`,
      );
    }
    elements.push(text(name, bytes.subarray(offset, offset + length)));
    offset += length;
  }
  if (offset !== bytes.length) {
    throw invalidKserve(`inputs.${name}`, `input '${name}' raw contents end inside an element's 4-byte length prefix`);
  }
  return elements;
}

function text(name: string, bytes: Uint8Array): string {
  try {
    return utf8.decode(bytes);
  } catch (cause) {
    throw new ArmatureError("REQUEST_INVALID", `input '${name}' is not valid UTF-8 text`, { cause, param: `inputs.${name}` });
  }
}

function parameterValues(parameters: Readonly<Record<string, GrpcParameter>>, where: string): Record<string, ParameterValue> {
  const values: Record<string, ParameterValue> = {};
  for (const [key, parameter] of Object.entries(parameters)) {
    const choice = parameter.parameter_choice;
    const value = choice === undefined ? undefined : parameter[choice];
    if (value === undefined) throw invalidKserve(`${where}.${key}`, `parameter '${key}' has no value`);
    values[key] = value;
  }
  return values;
}
