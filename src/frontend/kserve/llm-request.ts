import { ArmatureError } from "../../protocol/index.js";
import { type CommonParams, parseCommonParams } from "../requests/common-params.js";

/**
 * Triton's convention for a text LLM behind the KServe v2 protocol, as Dynamo's KServe frontend
 * serves it: input `text_input` (BYTES, one element), optional `streaming` (BOOL, one element;
 * `stream` is its alias), sampling as request parameters; outputs `text_output` and
 * `finish_reason` (BYTES). Both the REST and the gRPC routes reduce a request to an
 * {@link LlmRequest} here, so they honour and refuse exactly the same things.
 */

/** A parameter's value: OIP allows string, number and boolean; `stop` may also be a list of strings. */
export type ParameterValue = string | number | boolean | readonly string[];

/** An input tensor as the client sent it, decoded from JSON or protobuf. */
export interface InputTensor {
  readonly name: string;
  readonly datatype: string;
  readonly shape: readonly number[];
  /** The elements, flattened: strings for BYTES, booleans for BOOL. */
  readonly elements: readonly unknown[];
  readonly parameters: Readonly<Record<string, ParameterValue>>;
}

/** An output the client asked for. */
export interface RequestedOutput {
  readonly name: string;
  readonly parameters: Readonly<Record<string, ParameterValue>>;
}

export const OUTPUT_NAMES = ["text_output", "finish_reason"] as const;
export type OutputName = (typeof OUTPUT_NAMES)[number];

export interface LlmRequest {
  readonly model: string;
  /** The client's request id, echoed in the response. */
  readonly id: string | undefined;
  readonly textInput: string;
  readonly streaming: boolean;
  readonly params: CommonParams;
  /** The outputs to return, in order. */
  readonly outputs: readonly OutputName[];
}

/** The request parameters honoured, with the meaning `/v1/completions` gives the same names. */
export const HONOURED_PARAMETERS = [
  "max_tokens",
  "temperature",
  "top_p",
  "top_k",
  "min_p",
  "seed",
  "stop",
  "frequency_penalty",
  "presence_penalty",
  "repetition_penalty",
  "ignore_eos",
] as const;

/** `max_tokens` when the request does not say: the generate extension's default (generate_rest.yaml). */
export const DEFAULT_MAX_TOKENS = 20;

export function invalidKserve(param: string, message: string): ArmatureError {
  return new ArmatureError("REQUEST_INVALID", message, { param });
}

export interface InferFields {
  readonly id: string | undefined;
  readonly parameters: Readonly<Record<string, ParameterValue>>;
  readonly inputs: readonly InputTensor[];
  readonly outputs: readonly RequestedOutput[];
}

/** An inference request (REST `/infer`, gRPC `ModelInfer`/`ModelStreamInfer`) in Triton's LLM convention. */
export function llmInferRequest(model: string, fields: InferFields): LlmRequest {
  let textInput: string | undefined;
  let streaming = false;
  const seen = new Set<string>();
  for (const tensor of fields.inputs) {
    if (seen.has(tensor.name)) throw invalidKserve(`inputs.${tensor.name}`, `input '${tensor.name}' is given twice`);
    seen.add(tensor.name);
    const extra = Object.keys(tensor.parameters)[0];
    if (extra !== undefined) {
      throw invalidKserve(
        `inputs.${tensor.name}.parameters.${extra}`,
        `input '${tensor.name}' parameter '${extra}' is not supported; send input tensors without parameters`,
      );
    }
    if (tensor.name === "text_input") textInput = oneElement(tensor, "BYTES", "string") as string;
    else if (tensor.name === "streaming" || tensor.name === "stream")
      streaming = oneElement(tensor, "BOOL", "boolean") as boolean;
    else {
      throw invalidKserve(
        `inputs.${tensor.name}`,
        `input '${tensor.name}' is not served; this model takes 'text_input' (BYTES) and optionally 'streaming' (BOOL), and sampling as request parameters`,
      );
    }
  }
  if (textInput === undefined) {
    throw invalidKserve("inputs.text_input", "input 'text_input' is required: a BYTES tensor of shape [1] holding the prompt");
  }
  return {
    model,
    id: fields.id,
    textInput,
    streaming,
    params: samplingParams(model, fields.parameters, streaming),
    outputs: requestedOutputs(fields.outputs),
  };
}

/**
 * A generate-extension request (`/generate`, `/generate_stream`). As Triton does, fields beside
 * `id`, `text_input` and `parameters` are parameters too (`{"text_input": "…", "max_tokens": 8}`).
 */
export function llmGenerateRequest(model: string, body: Record<string, unknown>, stream: boolean): LlmRequest {
  const { id, text_input: text, parameters, ...topLevel } = body;
  if (typeof text !== "string") throw invalidKserve("text_input", "'text_input' is required and must be a string");
  if (id !== undefined && typeof id !== "string") throw invalidKserve("id", "'id' must be a string");
  if (parameters !== undefined && (parameters === null || typeof parameters !== "object" || Array.isArray(parameters))) {
    throw invalidKserve("parameters", "'parameters' must be a JSON object");
  }
  const nested = (parameters ?? {}) as Record<string, ParameterValue>;
  const both = Object.keys(topLevel).find((name) => Object.hasOwn(nested, name));
  if (both !== undefined) throw invalidKserve(both, `'${both}' is given both at the top level and in 'parameters'; send it once`);
  const all: Record<string, ParameterValue> = { ...(topLevel as Record<string, ParameterValue>), ...nested };
  const { stream: asked, details, ...sampling } = all;
  if (asked !== undefined && asked !== stream) {
    throw invalidKserve(
      "stream",
      `'stream' is ${String(asked)} on ${stream ? "generate_stream" : "generate"}; use ${stream ? "generate" : "generate_stream"} for ${stream ? "one response" : "a stream"}, or leave 'stream' out`,
    );
  }
  if (details !== undefined && details !== false) {
    throw new ArmatureError(
      "NOT_SUPPORTED",
      "'details' is not supported (it asks for per-token log probabilities); leave it out or send false. finish_reason is in every response anyway",
      { param: "details" },
    );
  }
  return {
    model,
    id,
    textInput: text,
    streaming: stream,
    params: samplingParams(model, sampling, stream),
    outputs: OUTPUT_NAMES,
  };
}

function oneElement(tensor: InputTensor, datatype: "BYTES" | "BOOL", jsType: "string" | "boolean"): unknown {
  const name = tensor.name;
  if (tensor.datatype !== datatype) {
    throw invalidKserve(`inputs.${name}.datatype`, `input '${name}' must have datatype ${datatype}, got '${tensor.datatype}'`);
  }
  const shapeOk = tensor.shape.length > 0 && tensor.shape.every((d) => d === 1);
  if (!shapeOk) {
    throw invalidKserve(`inputs.${name}.shape`, `input '${name}' must have shape [1], got [${tensor.shape.join(", ")}]`);
  }
  const [element] = tensor.elements;
  if (tensor.elements.length !== 1 || typeof element !== jsType) {
    throw invalidKserve(
      `inputs.${name}.data`,
      `input '${name}' must hold exactly one ${datatype === "BYTES" ? "string" : "boolean"}, got ${tensor.elements.length} element(s)`,
    );
  }
  return element;
}

function requestedOutputs(outputs: readonly RequestedOutput[]): readonly OutputName[] {
  if (outputs.length === 0) return OUTPUT_NAMES;
  return outputs.map((output) => {
    if (!(OUTPUT_NAMES as readonly string[]).includes(output.name)) {
      throw invalidKserve(
        `outputs.${output.name}`,
        `output '${output.name}' is not produced; this model's outputs are ${OUTPUT_NAMES.join(" and ")}`,
      );
    }
    for (const [key, value] of Object.entries(output.parameters)) {
      // Triton's binary-data extension: false asks for what is sent anyway (JSON data).
      if (key === "binary_data" && value === false) continue;
      throw invalidKserve(
        `outputs.${output.name}.parameters.${key}`,
        `output '${output.name}' parameter '${key}' is not supported${key === "binary_data" ? " (binary tensor data is not served; send false)" : ""}`,
      );
    }
    return output.name as OutputName;
  });
}

/**
 * The request parameters → the completion routes' sampling fields, checked by the same parser, so a
 * value is refused with the same words as on `/v1/completions`. Any other parameter is refused by name.
 */
function samplingParams(model: string, parameters: Readonly<Record<string, ParameterValue>>, stream: boolean): CommonParams {
  const body: Record<string, unknown> = { model, stream, max_tokens: DEFAULT_MAX_TOKENS };
  for (const [name, value] of Object.entries(parameters)) {
    if (name === "binary_data_output" && value === false) continue;
    if (!(HONOURED_PARAMETERS as readonly string[]).includes(name)) {
      throw invalidKserve(
        `parameters.${name}`,
        `parameter '${name}' is not supported; the parameters served are ${HONOURED_PARAMETERS.join(", ")} (docs/api.md)`,
      );
    }
    body[name] = value;
  }
  return parseCommonParams(body, ["max_tokens"]);
}
