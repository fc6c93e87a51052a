import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger, RequestTrace } from "../../observability/index.js";
import { ArmatureError } from "../../protocol/index.js";
import type { Router } from "../../router/index.js";
import type { RequestGrant } from "../access/index.js";
import { planChoices } from "../choice-plan.js";
import { sendChoices } from "../choice-responses.js";
import { startChoices } from "../choices.js";
import type { FrontendMetrics, RequestTimer } from "../frontend-metrics.js";
import { type Generation, type GenerationEnd, type GenerationInput, startGeneration } from "../generation.js";
import { toHttpError } from "../http-errors.js";
import { lingerThenClose, readJsonBody, sendJson } from "../http-io.js";
import type { ModelPipeline, ModelPipelines } from "../model-pipelines.js";
import { chatFormat, completionFormat, type FinishReason, type ResponseIdentity, textChunkSerializer } from "../openai-format.js";
import { refuseIfSurelyTooLong } from "../prompt-bound.js";
import { type ReasoningParserName, ReasoningStream, splitReasoning } from "../reasoning/index.js";
import { type ChatRequest, parseChatRequest } from "../requests/chat-request.js";
import { type CompletionRequest, parseCompletionRequest } from "../requests/completion-request.js";
import { SseWriter } from "../sse-writer.js";
import { ChatChunkShaper, chatAnswer, planToolCalls, type ToolCallParserName, type ToolCallPlan } from "../tool-calls/index.js";

export interface CompletionsRouteDeps {
  readonly router: Router;
  readonly pipelines: ModelPipelines;
  readonly metrics: FrontendMetrics;
  readonly logger: Logger;
  readonly bodyLimitBytes: number;
  /** The request's deadline from arrival (`--request-timeout`); undefined: none. */
  readonly requestTimeoutMs?: number | undefined;
  readonly migrationLimit: number;
  /** The API key's grant: which models it may use, where its tokens are charged. Absent without keys. */
  readonly access?: RequestGrant | undefined;
  /** The request's trace (its id is already in the response headers). */
  readonly trace?: RequestTrace | undefined;
  /** `--tool-call-parser`: how `tool_choice: "auto"` answers are read; absent, the chat template tells. */
  readonly toolCallParser?: ToolCallParserName | undefined;
  /** `--reasoning-parser`: splits chat answers into `reasoning_content` and content. Absent: no split. */
  readonly reasoningParser?: ReasoningParserName | undefined;
}

type Kind = "chat" | "text";

/** How long a response past its deadline may take to send its error before the connection is closed. */
const DEADLINE_GRACE_MS = 5000;

/** `POST /v1/chat/completions` and `POST /v1/completions`: one flow, two formats. */
export async function handleCompletions(
  kind: Kind,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  deps: CompletionsRouteDeps,
): Promise<void> {
  const endpoint = kind === "chat" ? "chat_completions" : "completions";
  const log = deps.logger.child({ requestId, endpoint });
  const baseHeaders: Record<string, string> = { "x-request-id": requestId };
  let timer: RequestTimer | undefined;
  let stream = false;
  const controller = new AbortController();
  const arrivedAt = performance.now();
  const timeoutMs = deps.requestTimeoutMs;
  const deadline =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          controller.abort(
            new ArmatureError("REQUEST_TIMEOUT", `the request took longer than this server's limit of ${timeoutMs / 1000} s`),
          );
          log.warn({ timeoutMs }, "request timed out; generation cancelled");
          // A client that stopped reading leaves the response waiting for a drain that never
          // comes: after a grace for the error to go out, the connection is closed.
          setTimeout(() => {
            if (!res.writableFinished) res.destroy();
          }, DEADLINE_GRACE_MS).unref();
        }, timeoutMs);
  res.on("close", () => {
    clearTimeout(deadline);
    if (!res.writableFinished) {
      controller.abort(new ArmatureError("REQUEST_CANCELLED", "client disconnected"));
      deps.metrics.disconnected.inc();
      log.info("client disconnected; generation cancelled");
    }
  });
  try {
    const raw = await readJsonBody(req, deps.bodyLimitBytes);
    const request = kind === "chat" ? parseChatRequest(raw) : parseCompletionRequest(raw);
    deps.access?.checkModel(request.model);
    stream = request.stream;
    deps.trace?.begin({ "armature.request_id": requestId, "armature.endpoint": endpoint, "gen_ai.request.model": request.model });
    // Only a served model's name labels metrics: a client's made-up names never reach the registry.
    const pipeline = await deps.pipelines.get(request.model);
    timer = deps.metrics.startRequest(pipeline.card.name, arrivedAt);
    const toolPlan = toolPlanFor(request, pipeline, deps.toolCallParser);
    const tokenIds = promptTokens(request, pipeline);
    const choicePlan = planChoices(
      request,
      pipeline,
      tokenIds,
      (prompt) => promptTokens({ ...request, prompt } as CompletionRequest, pipeline),
      toolPlan.mode !== "text",
    );
    const reasoning = reasoningFor(kind, request, toolPlan, deps.reasoningParser, choicePlan !== undefined);
    const generationInput: GenerationInput = {
      pipeline,
      tokenIds,
      params: toolPlan.mode === "constrained" ? { ...request, constraint: toolPlan.constraint } : request,
      signal: controller.signal,
      timeoutMs: timeoutMs === undefined ? undefined : Math.max(0, timeoutMs - (performance.now() - arrivedAt)),
      observer: timer,
      migrationLimit: deps.migrationLimit,
      trace: deps.trace,
      onMigrate: (from, to, generated) => {
        deps.metrics.migrations.inc({ model: request.model });
        log.warn({ from, to, generated }, "worker failed mid-stream; request moved to another worker");
      },
    };
    // n > 1, best_of, prompt batches, echo and logprobs take the choices path (src/frontend/choices.ts).
    const choices = choicePlan && (await startChoices(deps.router, { ...generationInput, ...choicePlan }));
    const generation = choices ? choices.first : await startGeneration(deps.router, generationInput);
    const headers: Record<string, string> = { ...baseHeaders, "x-armature-worker": generation.workerId };
    if (generation.prefillWorkerId) headers["x-armature-prefill-worker"] = generation.prefillWorkerId;
    if (generation.overlapBlocks !== undefined) {
      headers["x-armature-overlap-blocks"] = String(generation.overlapBlocks);
      deps.metrics.observeKvHit(request.model, (generation.overlapBlocks * pipeline.card.blockSize) / tokenIds.length);
    }
    const idn: ResponseIdentity = {
      id: `${kind === "chat" ? "chatcmpl" : "cmpl"}-${requestId}`,
      created: Math.floor(Date.now() / 1000),
      model: request.model,
    };
    log.debug({ model: request.model, workerId: generation.workerId, promptTokens: tokenIds.length }, "routed");
    const end = choices
      ? await sendChoices(kind, choices, idn, (choicePlan as NonNullable<typeof choicePlan>).response, res, headers, log)
      : request.stream
        ? await streamResponse(kind, generation, idn, request.includeUsage, res, headers, log, toolPlan, reasoning)
        : await unaryResponse(kind, generation, idn, res, headers, toolPlan, reasoning);
    // Cut short by the deadline: say so (504, or an error event on a stream that has begun).
    if (!end && isTimeout(controller.signal.reason)) throw controller.signal.reason;
    const usage = end?.usage;
    // A response cut short has no usage: its prompt was still processed, so it is charged.
    deps.access?.recordUsage(usage?.prompt_tokens ?? tokenIds.length, usage?.completion_tokens ?? 0);
    timer.finish({
      endpoint,
      requestType: stream ? "stream" : "unary",
      status: usage ? "success" : "error",
      errorType: usage ? undefined : controller.signal.aborted ? "cancelled" : "internal",
      inputTokens: tokenIds.length,
      outputTokens: usage?.completion_tokens,
      cachedTokens: usage?.prompt_tokens_details.cached_tokens,
      hostCachedTokens: end?.hostCachedTokens,
    });
    deps.trace?.finished({
      finishReason: end?.finishReason,
      promptTokens: usage?.prompt_tokens,
      completionTokens: usage?.completion_tokens,
      cachedTokens: usage?.prompt_tokens_details.cached_tokens,
      error: usage ? undefined : (controller.signal.reason ?? "the response ended without a result"),
    });
  } catch (error) {
    const http = toHttpError(error);
    deps.trace?.begin({ "armature.request_id": requestId, "armature.endpoint": endpoint });
    deps.trace?.finished({ status: http.status, error });
    if (http.status >= 500) log.error({ err: error }, "request failed");
    else log.info({ status: http.status, code: http.body.error.code, message: http.body.error.message }, "request rejected");
    (timer ?? deps.metrics.startRequest("unknown")).finish({
      endpoint,
      requestType: stream ? "stream" : "unary",
      status: "error",
      errorType: http.errorType,
    });
    if (!res.headersSent && !res.destroyed) {
      sendJson(res, http.status, http.body, baseHeaders);
      if (http.status === 413) lingerThenClose(req);
    } else if (stream && !res.writableEnded && !res.destroyed) {
      res.end(`data: ${JSON.stringify({ error: http.body.error })}\n\ndata: [DONE]\n\n`);
    }
  } finally {
    clearTimeout(deadline);
  }
}

/**
 * The reasoning parser for this answer: chat only, and not under a grammar (a constrained answer is
 * the constraint's JSON from its first token, with no thinking to split off). The choices path
 * (`n` > 1, `logprobs`) does not split reasoning yet: such requests are refused by name.
 */
function reasoningFor(
  kind: Kind,
  request: ChatRequest | CompletionRequest,
  toolPlan: ToolCallPlan,
  parser: ReasoningParserName | undefined,
  choices: boolean,
): ReasoningParserName | undefined {
  if (kind !== "chat" || parser === undefined || toolPlan.mode === "constrained" || request.constraint !== undefined) {
    return undefined;
  }
  if (choices) {
    const param = (request.n ?? 1) > 1 ? "n" : "logprobs";
    throw new ArmatureError(
      "NOT_SUPPORTED",
      `'${param}' is not served together with this server's --reasoning-parser yet; send one choice without logprobs`,
      { param },
    );
  }
  return parser;
}

/** How the request's tools are served; completions have none. */
function toolPlanFor(
  request: ChatRequest | CompletionRequest,
  pipeline: ModelPipeline,
  parser: ToolCallParserName | undefined,
): ToolCallPlan {
  if (request.kind !== "chat") return { mode: "text" };
  const plan = planToolCalls(request.tools, pipeline.card, parser);
  if (plan.mode === "constrained" && request.constraint) {
    throw new ArmatureError(
      "REQUEST_INVALID",
      "'tool_choice' required or named cannot be combined with 'response_format'; send one",
      {
        param: "tool_choice",
      },
    );
  }
  return plan;
}

function isTimeout(reason: unknown): boolean {
  return reason instanceof ArmatureError && reason.code === "REQUEST_TIMEOUT";
}

function promptTokens(request: ChatRequest | CompletionRequest, pipeline: ModelPipeline): number[] {
  if (request.kind === "chat") {
    refuseIfSurelyTooLong(
      request.messages.map((m) => m.content),
      pipeline,
      "messages",
    );
    return pipeline.tokenize(pipeline.renderChat(request.messages, { tools: request.tools?.tools }));
  }
  if ("text" in request.prompt) {
    refuseIfSurelyTooLong([request.prompt.text], pipeline, "prompt");
    return pipeline.tokenize(request.prompt.text);
  }
  const vocab = pipeline.tokenizer.vocabSize;
  const bad = request.prompt.tokenIds.find((t) => t >= vocab);
  if (bad !== undefined) {
    throw new ArmatureError("REQUEST_INVALID", `token id ${bad} is outside this model's vocabulary (0..${vocab - 1})`, {
      param: "prompt",
    });
  }
  return [...request.prompt.tokenIds];
}

async function unaryResponse(
  kind: Kind,
  generation: Generation,
  idn: ResponseIdentity,
  res: ServerResponse,
  headers: Record<string, string>,
  toolPlan: ToolCallPlan,
  reasoning: ReasoningParserName | undefined,
): Promise<GenerationEnd | undefined> {
  let text = "";
  for await (const event of generation.events) {
    if (event.type === "text") text += event.text;
    else {
      const body =
        kind === "chat"
          ? chatResponse(idn, toolPlan, reasoning, text, event.finishReason, event.usage)
          : completionFormat.response(idn, text, event.finishReason, event.usage);
      sendJson(res, 200, body, headers);
      return event;
    }
  }
  return undefined;
}

/** A whole chat answer: reasoning split off first (when a parser is on), then tool calls read from the rest. */
function chatResponse(
  idn: ResponseIdentity,
  toolPlan: ToolCallPlan,
  reasoning: ReasoningParserName | undefined,
  text: string,
  finishReason: FinishReason,
  usage: GenerationEnd["usage"],
) {
  const split = reasoning ? splitReasoning(reasoning, text) : undefined;
  const answer = chatAnswer(toolPlan, split ? (split.content ?? "") : text, finishReason);
  const content = split?.content === null && answer.toolCalls.length === 0 ? null : answer.content;
  return chatFormat.response(idn, content, answer.finishReason, usage, answer.toolCalls, split?.reasoning);
}

async function streamResponse(
  kind: Kind,
  generation: Generation,
  idn: ResponseIdentity,
  includeUsage: boolean,
  res: ServerResponse,
  headers: Record<string, string>,
  log: Logger,
  toolPlan: ToolCallPlan,
  reasoning: ReasoningParserName | undefined,
): Promise<GenerationEnd | undefined> {
  const sse = new SseWriter(res, headers);
  const chunk = (text: string | null, finish: FinishReason | null): unknown =>
    kind === "chat"
      ? chatFormat.chunk(
          idn,
          text === null ? (finish ? chatFormat.finalDelta : chatFormat.firstDelta) : chatFormat.textDelta(text),
          finish,
          includeUsage,
        )
      : completionFormat.chunk(idn, text ?? "", finish, includeUsage);
  const textChunk = textChunkSerializer(kind, idn, includeUsage);
  const tools = kind === "chat" ? new ChatChunkShaper(toolPlan, idn, includeUsage, textChunk) : undefined;
  const content = (text: string): unknown[] => (tools ? tools.text(text) : [textChunk(text)]);
  // With a reasoning parser, reasoning goes out as `reasoning_content` deltas and the rest as content.
  const thinking = reasoning ? new ReasoningStream(reasoning) : undefined;
  const split = (deltas: ReturnType<ReasoningStream["push"]>): unknown[] =>
    deltas.flatMap((d) =>
      d.kind === "reasoning" ? [chatFormat.chunk(idn, chatFormat.reasoningDelta(d.text), null, includeUsage)] : content(d.text),
    );
  const pieces = (text: string): unknown[] => (thinking ? split(thinking.push(text)) : content(text));
  try {
    if (kind === "chat") await sse.send(chunk(null, null));
    for await (const event of generation.events) {
      if (sse.closed) return undefined;
      if (event.type === "text") {
        for (const piece of pieces(event.text)) await sse.send(piece);
        continue;
      }
      for (const piece of thinking ? split(thinking.finish()) : []) await sse.send(piece);
      const held = tools?.end(event.finishReason);
      for (const piece of held?.chunks ?? []) await sse.send(piece);
      sse.cork(); // the final chunk, the usage chunk and [DONE] go out together; end() uncorks
      await sse.send(chunk(null, held?.finishReason ?? event.finishReason));
      if (includeUsage) {
        await sse.send(kind === "chat" ? chatFormat.usageChunk(idn, event.usage) : completionFormat.usageChunk(idn, event.usage));
      }
      await sse.done();
      return event;
    }
    return undefined;
  } catch (error) {
    // The client left (logged at info when it did): nothing failed here and no one is listening.
    if (sse.closed) return undefined;
    const http = toHttpError(error);
    log.error({ err: error }, "stream failed after it started");
    await sse.send({ error: http.body.error });
    await sse.done();
    return undefined;
  }
}
