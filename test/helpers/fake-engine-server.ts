import { createHash } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { startFakeKvCache } from "./fake-kv-cache.js";
import { readJson, sendJson } from "./json-exchange.js";

/**
 * Wire-faithful stand-ins for `vllm serve` and SGLang's `launch_server`, each with its
 * `--kv-events-config` (neither runs on these machines). The vLLM one serves the OpenAI routes armature's vllm worker uses (`/health`, `/v1/models`, `/tokenize`,
 * streaming `/v1/completions` with `return_token_ids` and usage), Prometheus `/metrics` with
 * `vllm:cache_config_info`, and the KV event publisher: a ZMQ PUB of `[topic, seq u64 BE, msgpack
 * EventBatch]` and its ROUTER replay socket, events as tagged arrays (vLLM before mid-2026) or maps
 * (0.26 on). Its "engine" is a prefix cache of whole blocks with engine hashes of its own (SHA-256,
 * as vLLM's default): a prompt's cached blocks are reported as `cached_tokens`, its new full blocks
 * published as `BlockStored`. Generated text is a deterministic function of the prompt.
 *
 * The SGLang one (`api: "sglang"`) shares the cache and the publisher (SGLang's events are vLLM's
 * wire, tagged arrays, its batch's third field the attention DP rank) and serves what armature's
 * sglang worker uses: `/health`, `/v1/models`, `/server_info` (page size, KV tokens, running
 * requests, streaming mode), `/tokenize`, native `/generate` (`input_ids` in; each message's
 * `output_ids` every token so far, or with `incremental` only the new ones, as
 * `--incremental-streaming-output` does; `meta_info` with `finish_reason` and `cached_tokens`;
 * `[DONE]`) and `/metrics` with SGLang's gauges.
 */
export interface FakeVllm {
  readonly url: string;
  /** vllm: its KV connector's engine id (`kv_transfer_params.remote_engine_id`). */
  readonly engineId: string;
  /** vllm: prefill calls it answered for a remote decode (`do_remote_decode`). */
  readonly prefills: number;
  /** vllm: decodes that pulled their prompt's KV from a prefill peer (`do_remote_prefill`). */
  readonly pulls: number;
  /** The bodies of the generation calls it received (`/v1/completions`, `/generate`), oldest first. */
  readonly bodies: readonly Record<string, unknown>[];
  /** The bodies of its adapter loads and unloads (vLLM's `/v1/…_lora_adapter`, SGLang's `/…_lora_adapter`), with `route`. */
  readonly loraCalls: readonly Record<string, unknown>[];
  readonly eventsEndpoint: string;
  readonly replayEndpoint: string;
  /** Batches published so far. */
  readonly published: number;
  /** Publishes nothing for the next `n` batches' sequence numbers (they stay in the replay buffer). */
  dropNext(n: number): void;
  /** Empties the cache and numbers batches from 0 again, as a restarted vLLM does. */
  restart(): void;
  close(): Promise<void>;
}

export interface FakeVllmSettings {
  /** Which server it stands in for (default vllm). */
  readonly api?: "vllm" | "sglang";
  /** sglang: each stream message carries only its new tokens (`--incremental-streaming-output`). */
  readonly incremental?: boolean;
  /** `encode(text)` of the model's tokenizer (the GGUF the worker reads). */
  readonly tokenize: (text: string) => readonly number[];
  readonly blockSize?: number;
  readonly form?: "array" | "map";
  readonly servedModel?: string;
  /** LoRA adapters served from the start (vLLM's `--lora-modules`, listed in `/v1/models` with their parent; SGLang's `--lora-paths`). */
  readonly loras?: readonly string[];
  readonly vocabSize?: number;
  /**
   * KV blocks its cache holds; beyond it the least recently used are evicted and published as
   * `BlockRemoved`, as vLLM's block pool does (default: no limit).
   */
  readonly capacityBlocks?: number;
  /** vllm: runs no KV connector (prefill calls come back without `kv_transfer_params`). */
  readonly noKvConnector?: boolean;
  /** sglang: `--disaggregation-mode` (default `null`); a prefill server bootstraps on `bootstrapPort`. */
  readonly disaggregationMode?: "null" | "prefill" | "decode";
  readonly bootstrapPort?: number;
  /** vllm: frees a prefill's KV at once, as if its lease ran out before the decode came. */
  readonly expireTransfers?: boolean;
  /** vllm: what `GET /version` says (default 0.12.0, the first without the `guided_*` fields). */
  readonly version?: string;
}

/** KV each fake vLLM's connector holds for remote decodes, by engine id: block ids → prompt. */
const connectors = new Map<string, Map<string, readonly number[]>>();

/**
 * SGLang's bootstrap rooms, by room: the half that came first waits (up to 3 s) for the other; the
 * prefill half names its server (`host:port` of its bootstrap) and its prompt.
 */
const rooms = new Map<string, { prefill?: { server: string; prompt: string }; arrived: () => void; paired: Promise<void> }>();

function room(id: string) {
  let entry = rooms.get(id);
  if (!entry) {
    let count = 0;
    let pair!: () => void;
    const paired = new Promise<void>((resolve) => {
      pair = resolve;
    });
    const arrived = () => {
      if (++count === 2) pair();
    };
    entry = { arrived, paired };
    rooms.set(id, entry);
  }
  return entry;
}

export async function startFakeVllm(settings: FakeVllmSettings): Promise<FakeVllm> {
  const blockSize = settings.blockSize ?? 16;
  const form = settings.form ?? "array";
  const served = settings.servedModel ?? "fake-model";
  const vocab = settings.vocabSize ?? 200;
  const kv = await startFakeKvCache({ blockSize, form, capacityBlocks: settings.capacityBlocks });
  const admit = kv.admit;
  let running = 0;
  let prefills = 0;
  let pulls = 0;
  const bodies: Record<string, unknown>[] = [];
  const adapters = new Set(settings.loras ?? []);
  const loraCalls: Record<string, unknown>[] = [];
  const engineId = createHash("sha256").update(`${Math.random()}`).digest("hex").slice(0, 16);
  const held = new Map<string, readonly number[]>();
  connectors.set(engineId, held);

  const api = settings.api ?? "vllm";
  /** The double's next token after `last`. */
  const next = (last: number): number => (last * 31 + 7) % vocab; // expectedTokens below

  /** SGLang's routes; false where the request is not one of them. */
  const sglang = async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    if (req.url === "/server_info") {
      sendJson(res, 200, {
        model_path: served,
        page_size: blockSize,
        max_total_num_tokens: 4096 * blockSize,
        max_running_requests: 64,
        incremental_streaming_output: settings.incremental === true,
        disaggregation_mode: settings.disaggregationMode ?? "null",
        disaggregation_bootstrap_port: settings.bootstrapPort ?? 8998,
      });
      return true;
    }
    if (req.url === "/metrics") {
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
      const labels = `model_name="${served}",engine_type="unified",tp_rank="0",pp_rank="0"`;
      res.end(
        [
          "# TYPE sglang:num_running_reqs gauge",
          `sglang:num_running_reqs{${labels}} ${running}.0`,
          "# TYPE sglang:num_queue_reqs gauge",
          `sglang:num_queue_reqs{${labels}} 0.0`,
          "# TYPE sglang:token_usage gauge",
          `sglang:token_usage{${labels}} ${(kv.size / 4096).toFixed(2)}`,
          "",
        ].join("\n"),
      );
      return true;
    }
    if (req.url !== "/generate" || req.method !== "POST") return false;
    const body = await readJson(req);
    bodies.push(body);
    const prompt = body.input_ids as number[];
    const lora = typeof body.lora_path === "string" ? body.lora_path : null;
    if (lora !== null && !adapters.has(lora)) {
      sendJson(res, 400, { error: { message: `LoRA adapter ${lora} is not loaded` } });
      return true;
    }
    const maxTokens = Number((body.sampling_params as { max_new_tokens?: unknown }).max_new_tokens);
    const mode = settings.disaggregationMode ?? "null";
    if (mode !== "null") {
      // Both halves must come at once with the same room, the prefill server's bootstrap and the same prompt.
      if (body.bootstrap_room === undefined) {
        sendJson(res, 400, { error: { message: `a ${mode} server needs bootstrap_room` } });
        return true;
      }
      const entry = room(String(body.bootstrap_room));
      if (mode === "prefill") entry.prefill = { server: `127.0.0.1:${settings.bootstrapPort ?? 8998}`, prompt: prompt.join(",") };
      entry.arrived();
      const timeout = new Promise<"timeout">((r) => setTimeout(() => r("timeout"), 3000).unref());
      if ((await Promise.race([entry.paired, timeout])) === "timeout") {
        sendJson(res, 400, { error: { message: `bootstrap room ${String(body.bootstrap_room)}: its other half never came` } });
        return true;
      }
      const server = `${String(body.bootstrap_host)}:${String(body.bootstrap_port)}`;
      if (entry.prefill?.server !== server || entry.prefill?.prompt !== prompt.join(",")) {
        sendJson(res, 400, { error: { message: `bootstrap room ${String(body.bootstrap_room)}: halves disagree` } });
        return true;
      }
      if (mode === "prefill") {
        prefills++;
        await admit(prompt);
        sendJson(res, 200, {
          text: "x",
          output_ids: [next(prompt.at(-1) ?? 0)],
          meta_info: { finish_reason: { type: "length" } },
        });
        return true;
      }
      pulls++;
    }
    running++;
    const cached = await admit(prompt, lora);
    res.writeHead(200, { "content-type": "text/event-stream" });
    let last = prompt.at(-1) ?? 0;
    let closed = false;
    res.on("close", () => {
      closed = true;
    });
    const output: number[] = [];
    for (let i = 0; i < maxTokens && !closed; i++) {
      last = next(last);
      output.push(last);
      const finished = i === maxTokens - 1;
      const message = {
        text: "x",
        output_ids: settings.incremental ? [last] : [...output],
        meta_info: {
          id: String(body.rid),
          finish_reason: finished ? { type: "length", length: maxTokens } : null,
          prompt_tokens: prompt.length,
          completion_tokens: output.length,
          cached_tokens: cached,
        },
      };
      res.write(`data: ${JSON.stringify(message)}\n\n`);
      await new Promise((r) => setImmediate(r));
    }
    running--;
    if (!closed) res.end("data: [DONE]\n\n");
    return true;
  };

  const server: Server = createServer(async (req, res) => {
    if (req.url === "/health") return void res.writeHead(200).end();
    if (req.url === "/version" && api === "vllm") return sendJson(res, 200, { version: settings.version ?? "0.12.0" });
    if (req.url === "/v1/models") {
      const base = { id: served, object: "model", owned_by: api, root: served, parent: null, max_model_len: 4096 };
      // vLLM lists its adapters with their parent; SGLang lists the model only.
      const listed = api === "vllm" ? [...adapters] : [];
      const loras = listed.map((id) => ({ id, object: "model", owned_by: api, root: `/adapters/${id}`, parent: served }));
      return sendJson(res, 200, { object: "list", data: [base, ...loras] });
    }
    const adapterRoutes =
      api === "vllm" ? ["/v1/load_lora_adapter", "/v1/unload_lora_adapter"] : ["/load_lora_adapter", "/unload_lora_adapter"];
    if (adapterRoutes.includes(req.url ?? "")) {
      const body = await readJson(req);
      const name = String(body.lora_name);
      loraCalls.push({ route: req.url, ...body });
      const loading = req.url === adapterRoutes[0];
      const refusal = loading
        ? adapters.has(name)
          ? { status: 400, message: `The lora adapter '${name}' has already been loaded.` }
          : undefined
        : adapters.has(name)
          ? undefined
          : { status: 404, message: `The lora adapter '${name}' cannot be found.` };
      if (!refusal) {
        if (loading) adapters.add(name);
        else adapters.delete(name);
      }
      // SGLang answers {success, error_message, loaded_adapters}; vLLM a line of text, or an OpenAI error.
      if (api === "sglang") {
        const loaded = Object.fromEntries([...adapters].map((a) => [a, `/adapters/${a}`]));
        return sendJson(res, refusal ? 400 : 200, {
          success: !refusal,
          error_message: refusal?.message ?? "",
          loaded_adapters: loaded,
        });
      }
      if (refusal)
        return sendJson(res, refusal.status, {
          error: { message: refusal.message, type: "BadRequestError", code: refusal.status },
        });
      res.writeHead(200, { "content-type": "text/plain" });
      return void res.end(`Success: LoRA adapter '${name}' ${loading ? "added" : "removed"} successfully.`);
    }
    if (req.url === "/tokenize" && req.method === "POST") {
      const body = await readJson(req);
      const tokens = settings.tokenize(String(body.prompt));
      return sendJson(res, 200, { count: tokens.length, max_model_len: 4096, tokens });
    }
    if (api === "sglang") {
      if (!(await sglang(req, res))) sendJson(res, 404, { detail: "Not Found" });
      return;
    }
    if (req.url === "/metrics") {
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
      return void res.end(
        [
          "# TYPE vllm:cache_config_info gauge",
          `vllm:cache_config_info{block_size="${blockSize}",cache_dtype="auto",enable_prefix_caching="True",num_gpu_blocks="${settings.capacityBlocks ?? 4096}"} 1.0`,
          "# TYPE vllm:num_requests_running gauge",
          `vllm:num_requests_running{engine="0",model_name="${served}"} ${running}`,
          "# TYPE vllm:num_requests_waiting gauge",
          `vllm:num_requests_waiting{engine="0",model_name="${served}"} 0.0`,
          "# TYPE vllm:kv_cache_usage_perc gauge",
          `vllm:kv_cache_usage_perc{engine="0",model_name="${served}"} ${(kv.size / (settings.capacityBlocks ?? 4096)).toFixed(4)}`,
          "",
        ].join("\n"),
      );
    }
    if (req.url === "/v1/completions" && req.method === "POST") {
      const body = await readJson(req);
      bodies.push(body);
      const prompt = body.prompt as number[];
      const lora = typeof body.model === "string" && adapters.has(body.model) ? body.model : null;
      if (body.model !== served && lora === null)
        return sendJson(res, 404, {
          error: { message: `The model \`${String(body.model)}\` does not exist.`, type: "NotFoundError", code: 404 },
        });
      const transfer = body.kv_transfer_params as Record<string, unknown> | undefined;
      if (transfer?.do_remote_decode === true) {
        // The prefill half (vLLM's NixlConnector): one token, not streamed, the KV kept for the peer.
        const cached = await admit(prompt);
        prefills++;
        const blockIds = Array.from({ length: Math.ceil(prompt.length / blockSize) }, (_, i) => prefills * 1000 + i);
        if (!settings.expireTransfers) held.set(blockIds.join(","), prompt);
        const first = next(prompt.at(-1) ?? 0);
        return sendJson(res, 200, {
          id: `cmpl-${prefills}`,
          object: "text_completion",
          model: served,
          choices: [{ index: 0, text: "x", token_ids: [first], finish_reason: "length" }],
          usage: { prompt_tokens: prompt.length, completion_tokens: 1, prompt_tokens_details: { cached_tokens: cached } },
          kv_transfer_params: settings.noKvConnector
            ? null
            : {
                do_remote_prefill: true,
                do_remote_decode: false,
                remote_block_ids: blockIds,
                remote_engine_id: engineId,
                remote_host: "127.0.0.1",
                remote_port: 5600,
                tp_size: 1,
              },
        });
      }
      if (transfer?.do_remote_prefill === true) {
        // The decode half: the KV is pulled from the prefill engine the parameters name, or the request fails.
        const peer = connectors.get(String(transfer.remote_engine_id));
        const key = Array.isArray(transfer.remote_block_ids) ? transfer.remote_block_ids.join(",") : "";
        const pulled = peer?.get(key);
        if (!pulled || pulled.join(",") !== prompt.join(",")) {
          return sendJson(res, 400, {
            error: { message: "KV transfer failed: no such remote blocks", type: "BadRequestError", code: 400 },
          });
        }
        peer?.delete(key);
        pulls++;
      }
      const maxTokens = Number(body.max_tokens);
      running++;
      const cached = await admit(prompt, lora);
      res.writeHead(200, { "content-type": "text/event-stream" });
      const id = `cmpl-${Math.random().toString(16).slice(2)}`;
      const created = Math.floor(Date.now() / 1000);
      let last = prompt.at(-1) ?? 0;
      let closed = false;
      res.on("close", () => {
        closed = true;
      });
      for (let i = 0; i < maxTokens && !closed; i++) {
        last = next(last);
        const finish = i === maxTokens - 1 ? "length" : null;
        const chunk = {
          id,
          object: "text_completion",
          created,
          model: served,
          choices: [{ index: 0, text: "x", token_ids: [last], logprobs: null, finish_reason: finish, stop_reason: null }],
          usage: null,
        };
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        await new Promise((r) => setImmediate(r));
      }
      running--;
      if (closed) return;
      const usage = {
        prompt_tokens: prompt.length,
        completion_tokens: maxTokens,
        total_tokens: prompt.length + maxTokens,
        prompt_tokens_details: { cached_tokens: cached },
      };
      res.write(`data: ${JSON.stringify({ id, object: "text_completion", created, model: served, choices: [], usage })}\n\n`);
      return void res.end("data: [DONE]\n\n");
    }
    sendJson(res, 404, { detail: "Not Found" });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    engineId,
    get prefills() {
      return prefills;
    },
    get pulls() {
      return pulls;
    },
    bodies,
    loraCalls,
    eventsEndpoint: kv.eventsEndpoint,
    replayEndpoint: kv.replayEndpoint,
    get published() {
      return kv.published;
    },
    dropNext(n) {
      kv.dropNext(n);
    },
    restart() {
      kv.restart();
    },
    async close() {
      connectors.delete(engineId);
      server.closeAllConnections();
      server.close();
      kv.close();
    },
  };
}

/** The SGLang stand-in: `startFakeVllm` with `api: "sglang"`. */
export function startFakeSglang(settings: Omit<FakeVllmSettings, "api" | "form">): Promise<FakeVllm> {
  return startFakeVllm({ ...settings, api: "sglang", form: "array" });
}

/** The doubles' tokens for a prompt: each the last times 31 plus 7, modulo the vocabulary (default 200). */
export function expectedTokens(prompt: readonly number[], count: number, vocab = 200): number[] {
  const out: number[] = [];
  let last = prompt.at(-1) ?? 0;
  for (let i = 0; i < count; i++) {
    last = (last * 31 + 7) % vocab;
    out.push(last);
  }
  return out;
}

/** The id of the worker of the armature at `serverUrl` that drives `engine` (from its `/health`). */
export async function workerOf(serverUrl: string, engine: { readonly url: string }): Promise<string> {
  const health = (await (await fetch(`${serverUrl}/health`)).json()) as { instances: { id: string; engine_url: string }[] };
  return health.instances.find((i) => i.engine_url === engine.url)?.id as string;
}
