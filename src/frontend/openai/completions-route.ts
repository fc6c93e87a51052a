import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "../../observability/index.js";
import { ArmatureError } from "../../protocol/index.js";
import { type Generation, type GenerationEnd, startGeneration } from "../generation.js";
import { sendJson } from "../http-io.js";
import type { ModelPipeline } from "../model-pipelines.js";
import { refuseIfSurelyTooLong } from "../prompt-bound.js";
import { type ReasoningParserName, ReasoningStream, splitReasoning } from "../reasoning/index.js";
import { type ChatRequest, parseChatRequest } from "../requests/chat-request.js";
import { type GenerationApi, type GenerationRouteDeps, type PreparedPrompt, serveGeneration } from "../routes/generation-flow.js";
import { streamGeneration } from "../sse-stream.js";
import { SseWriter } from "../sse-writer.js";
import { planToolCalls, type ToolCallParserName, type ToolCallPlan } from "../tool-calls/index.js";
import { ChatChunkShaper, chatAnswer } from "./chat-chunks.js";
import { type ChoicePlan, planChoices } from "./choice-plan.js";
import { sendChoices } from "./choice-responses.js";
import { type Choices, startChoices } from "./choices.js";
import { type CompletionRequest, parseCompletionRequest } from "./completion-request.js";
import { chatFormat, completionFormat, type FinishReason, type ResponseIdentity, textChunkSerializer } from "./openai-format.js";

/** What the completion routes need from the server (every generating route needs the same). */
export type CompletionsRouteDeps = GenerationRouteDeps;

type Kind = "chat" | "text";

/** A completion request's prompt, with how its answer is shaped: tools, choices, reasoning. */
interface PreparedCompletion extends PreparedPrompt {
  readonly request: ChatRequest | CompletionRequest;
  readonly toolPlan: ToolCallPlan;
  readonly choicePlan: ChoicePlan | undefined;
  readonly reasoning: ReasoningParserName | undefined;
  /** The choices started for `n` > 1, `best_of`, prompt batches, echo and logprobs. */
  choices?: Choices;
}

/** `POST /v1/chat/completions` and `POST /v1/completions`: one flow (generation-flow.ts), two formats. */
export function handleCompletions(
  kind: Kind,
  req: IncomingMessage,
  res: ServerResponse,
  requestId: string,
  deps: CompletionsRouteDeps,
): Promise<void> {
  return serveGeneration(completionsApi(kind, deps), req, res, requestId, deps);
}

function completionsApi(
  kind: Kind,
  deps: CompletionsRouteDeps,
): GenerationApi<{ readonly params: ChatRequest | CompletionRequest }, PreparedCompletion> {
  return {
    endpoint: kind === "chat" ? "chat_completions" : "completions",
    parse: (raw) => ({ params: kind === "chat" ? parseChatRequest(raw) : parseCompletionRequest(raw) }),
    prepare: async ({ params: request }, pipeline) => {
      const toolPlan = toolPlanFor(request, pipeline, deps.toolCallParser);
      const prompt = promptOf(request, pipeline);
      const tokenIds = typeof prompt === "string" ? await pipeline.tokenizeAsync(prompt) : prompt;
      const choicePlan = planChoices(
        request,
        pipeline,
        tokenIds,
        (batchPrompt) => {
          const each = promptOf({ ...request, prompt: batchPrompt } as CompletionRequest, pipeline);
          return typeof each === "string" ? pipeline.tokenize(each) : each;
        },
        toolPlan.mode !== "text",
      );
      return {
        tokenIds,
        params: toolPlan.mode === "constrained" ? { ...request, constraint: toolPlan.constraint } : request,
        request,
        toolPlan,
        choicePlan,
        reasoning: reasoningFor(kind, request, toolPlan, deps.reasoningParser, choicePlan !== undefined),
      };
    },
    // n > 1, best_of, prompt batches, echo and logprobs take the choices path (src/frontend/choices.ts).
    start: async (prepared, input, router) => {
      if (!prepared.choicePlan) return startGeneration(router, input);
      prepared.choices = await startChoices(router, { ...input, ...prepared.choicePlan });
      return prepared.choices.first;
    },
    respond: ({ params: request }, generation, { res, headers, requestId, log }, prepared) => {
      const idn: ResponseIdentity = {
        id: `${kind === "chat" ? "chatcmpl" : "cmpl"}-${requestId}`,
        created: Math.floor(Date.now() / 1000),
        model: request.model,
      };
      if (prepared.choices && prepared.choicePlan) {
        return sendChoices(kind, prepared.choices, idn, prepared.choicePlan.response, res, headers, log);
      }
      return request.stream
        ? streamResponse(kind, generation, idn, request.includeUsage, res, headers, log, prepared.toolPlan, prepared.reasoning)
        : unaryResponse(kind, generation, idn, res, headers, prepared.toolPlan, prepared.reasoning);
    },
    errorBody: (http) => http.body,
    endStreamWithError: (res, http) => res.end(`data: ${JSON.stringify({ error: http.body.error })}\n\ndata: [DONE]\n\n`),
  };
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
      "'tool_choice' required or named cannot be combined with 'response_format' or a 'guided_*' field; send one",
      {
        param: "tool_choice",
      },
    );
  }
  return plan;
}

/** The prompt's text to tokenize (a chat's rendered through the template), or its token ids as sent. */
function promptOf(request: ChatRequest | CompletionRequest, pipeline: ModelPipeline): string | number[] {
  if (request.kind === "chat") {
    refuseIfSurelyTooLong(
      request.messages.map((m) => m.content),
      pipeline,
      "messages",
    );
    return pipeline.renderChat(request.messages, { tools: request.tools?.tools });
  }
  if ("text" in request.prompt) {
    refuseIfSurelyTooLong([request.prompt.text], pipeline, "prompt");
    return request.prompt.text;
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
  return streamGeneration(
    generation,
    new SseWriter(res, headers),
    {
      named: false,
      doneMarker: true,
      start: () => (kind === "chat" ? [chunk(null, null)] : []),
      text: (event) => pieces(event.text),
      end: (event) => {
        const reasoningLeft = thinking ? split(thinking.finish()) : [];
        const held = tools?.end(event.finishReason);
        const usage = includeUsage
          ? [kind === "chat" ? chatFormat.usageChunk(idn, event.usage) : completionFormat.usageChunk(idn, event.usage)]
          : [];
        return [...reasoningLeft, ...(held?.chunks ?? []), chunk(null, held?.finishReason ?? event.finishReason), ...usage];
      },
      error: (http) => [{ error: http.body.error }],
    },
    log,
  );
}
