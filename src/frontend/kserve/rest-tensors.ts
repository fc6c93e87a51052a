import { asObject } from "../requests/field-checks.js";
import {
  type InferFields,
  type InputTensor,
  invalidKserve,
  type OutputName,
  type ParameterValue,
  type RequestedOutput,
} from "./llm-request.js";

/** KServe v2 REST inference JSON (`$inference_request`, inference_rest.md) → the fields of a request. */
export function parseRestInfer(raw: unknown): InferFields {
  const body = asObject(raw, "body");
  refuseOtherKeys(body, ["id", "parameters", "inputs", "outputs"], "");
  const { id, inputs, outputs } = body;
  if (id !== undefined && typeof id !== "string") throw invalidKserve("id", "'id' must be a string");
  if (!Array.isArray(inputs)) throw invalidKserve("inputs", "'inputs' is required: a list of input tensors");
  if (outputs !== undefined && !Array.isArray(outputs)) throw invalidKserve("outputs", "'outputs' must be a list");
  return {
    id,
    parameters: parameters(body.parameters, "parameters"),
    inputs: inputs.map(inputTensor),
    outputs: (outputs ?? []).map(requestedOutput),
  };
}

/** One output tensor of BYTES holding one string, as `$response_output`. */
export function restOutput(name: OutputName, value: string): { name: string; datatype: string; shape: number[]; data: string[] } {
  return { name, datatype: "BYTES", shape: [1], data: [value] };
}

function inputTensor(raw: unknown, index: number): InputTensor {
  const where = `inputs[${index}]`;
  const tensor = asObject(raw, where);
  refuseOtherKeys(tensor, ["name", "shape", "datatype", "parameters", "data"], `${where}.`);
  const { name, shape, datatype, data } = tensor;
  if (typeof name !== "string" || name === "") throw invalidKserve(`${where}.name`, `'${where}.name' is required: a string`);
  if (typeof datatype !== "string") throw invalidKserve(`inputs.${name}.datatype`, `input '${name}' needs a 'datatype' string`);
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw invalidKserve(`inputs.${name}.shape`, `input '${name}' needs a 'shape': a list of non-negative integers`);
  }
  if (!Array.isArray(data)) {
    throw invalidKserve(`inputs.${name}.data`, `input '${name}' needs 'data': a list (binary tensor data is not served)`);
  }
  const elements = data.flat(Number.POSITIVE_INFINITY);
  const count = shape.reduce((product: number, d: number) => product * d, 1);
  if (elements.length !== count) {
    throw invalidKserve(
      `inputs.${name}.data`,
      `input '${name}' has ${elements.length} element(s) in 'data' but its shape [${shape.join(", ")}] holds ${count}`,
    );
  }
  return { name, datatype, shape, elements, parameters: parameters(tensor.parameters, `inputs.${name}.parameters`) };
}

function requestedOutput(raw: unknown, index: number): RequestedOutput {
  const where = `outputs[${index}]`;
  const output = asObject(raw, where);
  refuseOtherKeys(output, ["name", "parameters"], `${where}.`);
  if (typeof output.name !== "string") throw invalidKserve(`${where}.name`, `'${where}.name' is required: a string`);
  return { name: output.name, parameters: parameters(output.parameters, `outputs.${output.name}.parameters`) };
}

/** `$parameters`: name → string, number or boolean (a list of strings too, for `stop`). */
function parameters(raw: unknown, where: string): Record<string, ParameterValue> {
  if (raw === undefined) return {};
  const object = asObject(raw, where);
  for (const [key, value] of Object.entries(object)) {
    const scalar = typeof value === "string" || typeof value === "number" || typeof value === "boolean";
    const strings = Array.isArray(value) && value.every((v) => typeof v === "string");
    if (!scalar && !strings) {
      throw invalidKserve(`${where}.${key}`, `parameter '${key}' must be a string, number or boolean`);
    }
  }
  return object as Record<string, ParameterValue>;
}

function refuseOtherKeys(object: Record<string, unknown>, known: readonly string[], prefix: string): void {
  const other = Object.keys(object).find((key) => !known.includes(key));
  if (other !== undefined) {
    throw invalidKserve(`${prefix}${other}`, `'${prefix}${other}' is not a field of a KServe v2 inference request`);
  }
}
