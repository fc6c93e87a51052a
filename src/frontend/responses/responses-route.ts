import type { IncomingMessage, ServerResponse } from "node:http";
import { ArmatureError } from "../../protocol/index.js";
import type { Generation, GenerationEnd } from "../generation.js";
import { sendJson } from "../http-io.js";
import type { TokenLogprobEntry } from "../logprobs-format.js";
import { refuseIfSurelyTooLong } from "../prompt-bound.js";
import { type GenerationApi, type GenerationRouteDeps, type Reply, serveGeneration } from "../routes/generation-flow.js";
import { streamGeneration } from "../sse-stream.js";
import { SseWriter } from "../sse-writer.js";
import {
  answerWithToolCalls,
  planToolCalls,
  type ToolCallParserName,
  type ToolCallPlan,
  toolCallStream,
} from "../tool-calls/index.js";
import { outputItems, type ResponseIdentity, responseObject } from "./responses-format.js";
import { parseResponsesRequest, type ResponsesRequest } from "./responses-request.js";
import { ResponsesEventStream } from "./responses-stream.js";

/** The event numbering of each stream in progress, so that an error after it began continues it. */
const streams = new WeakMap<ServerResponse, ResponsesEventStream>();

/** The Responses side of one request; the tool plan is decided once the model is known. */
function responsesApi(toolCallParser: ToolCallParserName | undefined): GenerationApi<ResponsesRequest> {
  let plan: ToolCallPlan = { mode: "text" };
  return {
    endpoint: "responses",
    parse: parseResponsesRequest,
    prepare: async (request, pipeline) => {
      refuseIfSurelyTooLong(
        request.messages.map((m) => m.content),
        pipeline,
        "input",
      );
      if (request.params.logprobs && pipeline.card.engine === "mocker") {
        throw new ArmatureError(
          "NOT_SUPPORTED",
          `'include' "message.output_text.logprobs" is not supported by the mocker engine, which has no token probabilities; leave it out or serve the model with --engine llamacpp`,
          { param: "include" },
        );
      }
      plan = planToolCalls(request.tools, pipeline.card, toolCallParser);
      if (plan.mode === "constrained" && request.params.constraint) {
        throw new ArmatureError(
          "REQUEST_INVALID",
          "'tool_choice' required or naming a function cannot be combined with a JSON 'text.format'; send one",
          { param: "tool_choice" },
        );
      }
      const tokenIds = await pipeline.tokenizeAsync(pipeline.renderChat(request.messages, { tools: request.tools?.tools }));
      refuseOverBudget(tokenIds.length, request.params.maxTokens, pipeline.card.contextLength);
      const params = plan.mode === "constrained" ? { ...request.params, constraint: plan.constraint } : request.params;
      return { tokenIds, params };
    },
    respond: (request, generation, reply) => {
      const compact = reply.requestId.replaceAll("-", "");
      const idn: ResponseIdentity = {
        id: `resp_${compact}`,
        itemId: `msg_${compact}`,
        createdAt: Math.floor(Date.now() / 1000),
        model: request.params.model,
        echo: request.echo,
      };
      return request.params.stream ? streamResponse(idn, plan, generation, reply) : wholeResponse(idn, plan, generation, reply);
    },
    errorBody: (http) => http.body,
    endStreamWithError: (res, http) => {
      const event = streams.get(res)?.error(http.body.error) ?? { ...http.body.error, type: "error" };
      res.end(`event: error\ndata: ${JSON.stringify(event)}\n\n`);
    },
  };
}

/** The context checks the generation makes, named by this API's fields (`input`, `max_output_tokens`). */
function refuseOverBudget(promptTokens: number, maxOutputTokens: number | undefined, contextLength: number): void {
  const room = contextLength - promptTokens;
  if (room <= 0) {
    throw new ArmatureError(
      "PROMPT_TOO_LONG",
      `This model's maximum context length is ${contextLength} tokens; the input has ${promptTokens}. Shorten the input.`,
      { param: "input" },
    );
  }
  if (maxOutputTokens !== undefined && maxOutputTokens > room) {
    throw new ArmatureError(
      "REQUEST_INVALID",
      `max_output_tokens is too large: ${maxOutputTokens}. This model's maximum context length is ${contextLength} tokens and the input has ${promptTokens}; ask for at most ${room}.`,
      { param: "max_output_tokens" },
    );
  }
}

/**
 * `POST /v1/responses` (OpenAI's Create a model response): text input, message items and earlier
 * function calls with their outputs, `instructions` as a system message, function tools, through
 * the model's chat template and the chat pipeline. Nothing is stored (`store: true` is refused).
 */
export function handleResponses(req: IncomingMessage, res: ServerResponse, requestId: string, deps: GenerationRouteDeps) {
  return serveGeneration(responsesApi(deps.toolCallParser), req, res, requestId, deps);
}

async function wholeResponse(
  idn: ResponseIdentity,
  plan: ToolCallPlan,
  generation: Generation,
  reply: Reply,
): Promise<GenerationEnd | undefined> {
  let text = "";
  const logprobs: TokenLogprobEntry[] = [];
  for await (const event of generation.events) {
    if (event.type === "text") {
      text += event.text;
      if (event.logprobs) logprobs.push(...event.logprobs);
    } else {
      const { content, toolCalls } = answerWithToolCalls(plan, text);
      const output = outputItems(idn, content, toolCalls, event, logprobs);
      sendJson(reply.res, 200, responseObject(idn, output, event), reply.headers);
      return event;
    }
  }
  return undefined;
}

/** The Responses event stream (`ResponsesEventStream`), each event `event: <type>` + `data: <json>`. */
async function streamResponse(
  idn: ResponseIdentity,
  plan: ToolCallPlan,
  generation: Generation,
  reply: Reply,
): Promise<GenerationEnd | undefined> {
  const events = new ResponsesEventStream(idn);
  streams.set(reply.res, events);
  const shaper = toolCallStream(plan);
  const pieces = (deltas: ReturnType<NonNullable<typeof shaper>["push"]>) =>
    deltas.flatMap((d) => (d.type === "content" ? events.text(d.text) : d.calls.flatMap((c) => events.call(c))));
  // Log-probabilities of tokens whose text is still held back go out with the next text.
  let pending: TokenLogprobEntry[] = [];
  return streamGeneration(
    generation,
    new SseWriter(reply.res, reply.headers),
    {
      named: true,
      doneMarker: false,
      start: () => events.start(),
      text: (event) => {
        if (event.logprobs) pending.push(...event.logprobs);
        if (event.text === "") return [];
        const out = shaper ? pieces(shaper.push(event.text)) : events.text(event.text, pending);
        pending = [];
        return out;
      },
      end: (event) => [
        ...(shaper ? pieces(shaper.finish()) : pending.length > 0 ? events.text("", pending) : []),
        ...events.end(event),
      ],
      error: (http) => [events.error(http.body.error)],
    },
    reply.log,
  );
}
