import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { startFakeKvCache } from "./fake-kv-cache.js";
import { readJson, sendJson } from "./json-exchange.js";

/**
 * A wire-faithful stand-in for `trtllm-serve` (no TensorRT-LLM runs on these machines), written
 * from its source (`tensorrt_llm/serve/openai_protocol.py`, `openai_server.py`,
 * `postprocess_handlers.py`). It serves what armature's trtllm worker uses:
 * - `/health` (200, empty), `/version`, `/v1/models` (`owned_by: tensorrt_llm`), `/server_info`
 *   (`tokens_per_block`, `max_batch_size`; absent with `serverInfo: false`, as before 2026), and
 *   `/prometheus/metrics` with `perfMetrics` (`return_perf_metrics: true`);
 * - `POST /v1/completions` with TensorRT-LLM's request model: unknown fields are a 400 (`extra=
 *   "forbid"`, the 2026 shape `{"error": "…"}`), `stream_options` only with `stream`, a non-empty
 *   `suffix` refused; `prompt` as text or token ids; `detokenize: false` returns each chunk's new
 *   `token_ids` and empty text, otherwise text and `token_ids: null`; usage last, in a chunk without
 *   choices, with `prompt_tokens_details.cached_tokens`; `[DONE]`; `lora_request` read from a
 *   folder it knows (`adapterPaths`), others fail with its error object; a stop token ends the
 *   stream (`finish_reason: stop`), kept only with `include_stop_str_in_output`;
 * - `POST /_internal/tokenize` (`{count, tokens}`, with a beginning-of-sequence token as its
 *   tokenizer adds one; absent with `internalTokenize: false`, as on older servers);
 * - the KV event publisher of its KV cache manager V2 (vLLM's wire, tagged arrays), and its older pull
 *   route, `POST /kv_cache_events` (the buffered events as JSON, forgotten once read).
 * With `beforeDetokenize` it stands in for a server older than the `detokenize` field, which its
 * request model then refuses as unknown.
 */
export interface FakeTrtllm {
  readonly url: string;
  /** The bodies of the completion calls it received, oldest first. */
  readonly bodies: readonly Record<string, unknown>[];
  /** Completion streams open now (a closed connection ends one, as the server's disconnect check does). */
  readonly running: number;
  readonly eventsEndpoint: string;
  readonly replayEndpoint: string;
  /** The next stream sends `tokens` tokens, then an error chunk and `[DONE]`, as a failing engine does. */
  failNextAfter(tokens: number): void;
  close(): Promise<void>;
}

export interface FakeTrtllmSettings {
  /** `encode(text)` of the model's tokenizer, without special tokens added. */
  readonly tokenize: (text: string) => readonly number[];
  /** The beginning-of-sequence token its tokenizer adds to text (`add_special_tokens`); none by default. */
  readonly bos?: number | undefined;
  readonly blockSize?: number;
  readonly servedModel?: string;
  readonly vocabSize?: number;
  readonly serverInfo?: boolean;
  readonly internalTokenize?: boolean;
  readonly perfMetrics?: boolean;
  readonly beforeDetokenize?: boolean;
  /** LoRA adapter folders on its host (what `lora_request.lora_path` may name). */
  readonly adapterPaths?: readonly string[];
}

/** `CompletionRequest`'s fields (TensorRT-LLM 2026); `detokenize` came in mid-2025. */
// biome-ignore format: a list of names
const FIELDS = new Set([
  "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "n",
  "presence_penalty", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p", "user",
  "lora_request", "prompt_ignore_length", "use_beam_search", "top_k", "top_p_min", "min_p", "repetition_penalty",
  "length_penalty", "early_stopping", "stop_token_ids", "include_stop_str_in_output", "ignore_eos", "min_tokens",
  "skip_special_tokens", "spaces_between_special_tokens", "truncate_prompt_tokens", "return_context_logits",
  "detokenize", "thinking_token_budget", "add_special_tokens", "response_format", "disaggregated_params",
  "priority", "conversation_params",
]);

export async function startFakeTrtllm(settings: FakeTrtllmSettings): Promise<FakeTrtllm> {
  const blockSize = settings.blockSize ?? 32;
  const served = settings.servedModel ?? "fake-trtllm-model";
  const vocab = settings.vocabSize ?? 200;
  const kv = await startFakeKvCache({ blockSize, form: "array" });
  const bodies: Record<string, unknown>[] = [];
  let running = 0;
  let failAfter: number | undefined;
  const next = (last: number): number => (last * 31 + 7) % vocab; // expectedTokens in fake-engine-server.ts

  /** TensorRT-LLM's handler errors: `ErrorResponse`, its status the code. */
  const error = (res: ServerResponse, message: string) =>
    sendJson(res, 400, { object: "error", message, type: "BadRequestError", param: null, code: 400 });

  const completion = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await readJson(req);
    bodies.push(body);
    const unknown = Object.keys(body).find((key) => !FIELDS.has(key) || (settings.beforeDetokenize && key === "detokenize"));
    // Request validation (2026): 400 with `{"error": str(exc)}`.
    if (unknown)
      return sendJson(res, 400, {
        error: `1 validation error for CompletionRequest\n${unknown}\n  Extra inputs are not permitted`,
      });
    if (body.stream_options !== undefined && body.stream !== true)
      return sendJson(res, 400, { error: "Stream options can only be defined when stream is true." });
    if (typeof body.suffix === "string" && body.suffix !== "") return error(res, "suffix is not supported");
    const lora = body.lora_request as { lora_name?: unknown; lora_path?: unknown } | undefined;
    if (lora && !settings.adapterPaths?.includes(String(lora.lora_path)))
      return error(res, `LoRA checkpoint path ${String(lora.lora_path)} does not exist`);
    const prompt =
      typeof body.prompt === "string"
        ? [
            ...(body.add_special_tokens !== false && settings.bos !== undefined ? [settings.bos] : []),
            ...settings.tokenize(body.prompt),
          ]
        : (body.prompt as number[]);
    const detokenize = body.detokenize !== false;
    const maxTokens = Number(body.max_tokens ?? 16);
    const stops = new Set((body.stop_token_ids as number[] | undefined) ?? []);
    const keepStop = body.include_stop_str_in_output === true;
    const cached = await kv.admit(prompt, lora ? String(lora.lora_name) : null);
    const output: number[] = [];
    let finish = "length" as "length" | "stop";
    let last = prompt.at(-1) ?? 0;
    const generate = (): { tokens: number[]; finish: string | null } => {
      last = next(last);
      if (stops.has(last)) {
        finish = "stop";
        return { tokens: keepStop ? [last] : [], finish };
      }
      output.push(last);
      return { tokens: [last], finish: output.length === maxTokens ? "length" : null };
    };
    const usage = () => ({
      prompt_tokens: prompt.length,
      total_tokens: prompt.length + output.length,
      completion_tokens: output.length,
      prompt_tokens_details: { cached_tokens: cached },
    });
    const id = `cmpl-${Math.random().toString(16).slice(2)}`;
    const created = Math.floor(Date.now() / 1000);
    const choice = (tokens: number[], reason: string | null) => ({
      index: 0,
      text: detokenize ? "x".repeat(tokens.length) : "",
      token_ids: detokenize ? null : tokens,
      logprobs: null,
      finish_reason: reason,
      stop_reason: null,
      avg_decoded_tokens_per_iter: 1.0,
    });
    if (body.stream !== true) {
      const all: number[] = [];
      for (let step = generate(); ; step = generate()) {
        all.push(...step.tokens);
        if (step.finish !== null || finish === "stop") break;
      }
      return sendJson(res, 200, {
        id,
        object: "text_completion",
        created,
        model: body.model,
        choices: [choice(all, finish)],
        usage: usage(),
      });
    }
    running++;
    res.writeHead(200, { "content-type": "text/event-stream" });
    let closed = false;
    res.on("close", () => {
      closed = true;
    });
    const failing = failAfter;
    failAfter = undefined;
    const send = (message: unknown) => res.write(`data: ${JSON.stringify(message)}\n\n`);
    for (let sent = 0; !closed; sent++) {
      if (failing !== undefined && sent === failing) {
        send({ error: { message: "Executor worker returned error", type: "server_error", code: null, param: null } });
        break;
      }
      const step = generate();
      send({
        id,
        object: "text_completion",
        created,
        model: body.model,
        choices: [choice(step.tokens, step.finish ?? (finish === "stop" ? "stop" : null))],
        usage: null,
      });
      if (step.finish !== null || finish === "stop") break;
      await new Promise((r) => setImmediate(r));
    }
    running--;
    if (closed) return;
    const options = body.stream_options as { include_usage?: unknown } | undefined;
    if (failing === undefined && options && options.include_usage !== false)
      send({ id, object: "text_completion", created, model: body.model, choices: [], usage: usage() });
    res.end("data: [DONE]\n\n");
  };

  const server: Server = createServer(async (req, res) => {
    if (req.url === "/health") return void res.writeHead(200).end();
    if (req.url === "/version") return sendJson(res, 200, { version: "1.3.0" });
    if (req.url === "/v1/models")
      return sendJson(res, 200, {
        object: "list",
        data: [{ id: served, object: "model", created: Math.floor(Date.now() / 1000), owned_by: "tensorrt_llm" }],
      });
    if (req.url === "/server_info" && settings.serverInfo !== false)
      return sendJson(res, 200, {
        disaggregated_params: null,
        max_batch_size: 64,
        kv_cache_hash_algo: "v2_sha256",
        tokens_per_block: blockSize,
      });
    if (req.url === "/prometheus/metrics" && settings.perfMetrics) {
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
      const labels = `model_name="${served}",engine_type="pytorch"`;
      return void res.end(
        [
          "# TYPE trtllm_num_requests_running gauge",
          `trtllm_num_requests_running{${labels}} ${running}.0`,
          "# TYPE trtllm_num_requests_waiting gauge",
          `trtllm_num_requests_waiting{${labels}} 0.0`,
          "# TYPE trtllm_kv_cache_used_blocks gauge",
          `trtllm_kv_cache_used_blocks{${labels}} ${kv.size}.0`,
          "# TYPE trtllm_kv_cache_max_blocks gauge",
          `trtllm_kv_cache_max_blocks{${labels}} 4096.0`,
          "",
        ].join("\n"),
      );
    }
    if (req.url === "/_internal/tokenize" && req.method === "POST" && settings.internalTokenize !== false) {
      const body = await readJson(req);
      const tokens = [...(settings.bos === undefined ? [] : [settings.bos]), ...settings.tokenize(String(body.prompt))];
      return sendJson(res, 200, { count: tokens.length, tokens });
    }
    if (req.url === "/v1/completions" && req.method === "POST") return completion(req, res);
    if (req.url === "/kv_cache_events" && req.method === "POST") {
      res.writeHead(200, { "content-type": "application/json" });
      return void res.end(kv.takeTrtllmEvents());
    }
    sendJson(res, 404, { detail: "Not Found" });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    bodies,
    get running() {
      return running;
    },
    eventsEndpoint: kv.eventsEndpoint,
    replayEndpoint: kv.replayEndpoint,
    failNextAfter(tokens) {
      failAfter = tokens;
    },
    async close() {
      server.closeAllConnections();
      server.close();
      kv.close();
    },
  };
}
