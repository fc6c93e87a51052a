import { ArmatureError } from "../protocol/index.js";
import type { ModelPipeline } from "./model-pipelines.js";
import type { CommonParams } from "./requests/common-params.js";

/**
 * Refuses, by name, what the model's engine cannot honour, and token ids outside its vocabulary.
 * The mocker models timing with a fixed text: it has no probabilities, so `logprobs` (and
 * `best_of`, which ranks by them) and `logit_bias` are refused there. llama-server workers take
 * neither token log-probabilities (armature does not read its `n_probs` yet) nor a minimum length
 * or stop token ids (llama-server has neither).
 */
export function refuseUnservableParams(pipeline: ModelPipeline, params: CommonParams & { readonly bestOf?: number }): void {
  if (pipeline.card.engine === "mocker") {
    const asked =
      params.logprobs !== undefined
        ? "logprobs"
        : params.sampling.logitBias !== undefined
          ? "logit_bias"
          : (params.bestOf ?? 1) > (params.n ?? 1)
            ? "best_of"
            : undefined;
    if (asked) {
      throw new ArmatureError(
        "NOT_SUPPORTED",
        `'${asked}' is not supported by the mocker engine, which has no token probabilities; leave it out or serve the model with --engine llamacpp`,
        { param: asked },
      );
    }
  }
  if (pipeline.card.engine === "llama-server") {
    const asked =
      params.logprobs !== undefined
        ? "logprobs"
        : (params.bestOf ?? 1) > (params.n ?? 1)
          ? "best_of"
          : (params.minTokens ?? 0) > 0
            ? "min_tokens"
            : (params.stopTokenIds?.length ?? 0) > 0
              ? "stop_token_ids"
              : undefined;
    if (asked) {
      throw new ArmatureError(
        "NOT_SUPPORTED",
        `'${asked}' is not supported by llama-server workers yet (docs/engines.md); leave it out or serve the model with --engine llamacpp`,
        { param: asked },
      );
    }
  }
  const vocab = pipeline.tokenizer.vocabSize;
  const outside = (param: string, ids: readonly number[] | undefined): void => {
    const bad = ids?.find((t) => t >= vocab);
    if (bad !== undefined) {
      throw new ArmatureError(
        "REQUEST_INVALID",
        `token id ${bad} in '${param}' is outside this model's vocabulary (0..${vocab - 1})`,
        {
          param,
        },
      );
    }
  };
  outside(
    "logit_bias",
    params.sampling.logitBias?.map((e) => e.token),
  );
  outside("stop_token_ids", params.stopTokenIds);
}
