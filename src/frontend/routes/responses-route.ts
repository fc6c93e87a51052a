import type { IncomingMessage, ServerResponse } from "node:http";
import type { Generation, GenerationEnd } from "../generation.js";
import { toHttpError } from "../http-errors.js";
import { sendJson } from "../http-io.js";
import { refuseIfSurelyTooLong } from "../prompt-bound.js";
import { parseResponsesRequest, type ResponsesRequest } from "../requests/responses-request.js";
import { type ResponseIdentity, responsesFormat } from "../responses-format.js";
import { SseWriter } from "../sse-writer.js";
import { type GenerationApi, type GenerationRouteDeps, type Reply, serveGeneration } from "./generation-flow.js";

type EventStream = ReturnType<typeof responsesFormat.stream>;

/** The event numbering of each stream in progress, so that an error after it began continues it. */
const streams = new WeakMap<ServerResponse, EventStream>();

const responsesApi: GenerationApi<ResponsesRequest> = {
  endpoint: "responses",
  parse: parseResponsesRequest,
  promptTokens: (request, pipeline) => {
    refuseIfSurelyTooLong(
      request.messages.map((m) => m.content),
      pipeline,
      "input",
    );
    return pipeline.tokenize(pipeline.renderChat(request.messages));
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
    return request.params.stream ? streamResponse(idn, generation, reply) : wholeResponse(idn, generation, reply);
  },
  errorBody: (http) => http.body,
  endStreamWithError: (res, http) => {
    const events = streams.get(res);
    const event = events ? events.error(http.body.error) : { ...http.body.error, type: "error" };
    res.end(`event: error\ndata: ${JSON.stringify(event)}\n\n`);
  },
};

/**
 * `POST /v1/responses` (OpenAI's Create a model response): text input or message items, with
 * `instructions` as a system message, through the model's chat template and the chat pipeline.
 * Nothing is stored (`store: true` is refused), so there is no retrieval by id.
 */
export function handleResponses(req: IncomingMessage, res: ServerResponse, requestId: string, deps: GenerationRouteDeps) {
  return serveGeneration(responsesApi, req, res, requestId, deps);
}

async function wholeResponse(idn: ResponseIdentity, generation: Generation, reply: Reply): Promise<GenerationEnd | undefined> {
  let text = "";
  for await (const event of generation.events) {
    if (event.type === "text") text += event.text;
    else {
      sendJson(reply.res, 200, responsesFormat.response(idn, text, event), reply.headers);
      return event;
    }
  }
  return undefined;
}

/** The Responses event sequence for one message with one text part, each event `event: <type>` + `data: <json>`. */
async function streamResponse(idn: ResponseIdentity, generation: Generation, reply: Reply): Promise<GenerationEnd | undefined> {
  const sse = new SseWriter(reply.res, reply.headers);
  const events = responsesFormat.stream(idn);
  streams.set(reply.res, events);
  const send = (event: { readonly type: string }): Promise<void> => sse.sendEvent(event.type, event);
  let text = "";
  try {
    await send(events.created());
    await send(events.inProgress());
    await send(events.itemAdded());
    await send(events.partAdded());
    for await (const event of generation.events) {
      if (sse.closed) return undefined;
      if (event.type === "text") {
        if (event.text === "") continue;
        text += event.text;
        await send(events.textDelta(event.text));
        continue;
      }
      sse.cork(); // the closing events go out together; end() uncorks
      for (const closing of events.closing(text, event)) await send(closing);
      sse.end();
      return event;
    }
    return undefined;
  } catch (error) {
    if (sse.closed) return undefined;
    reply.log.error({ err: error }, "stream failed after it started");
    await send(events.error(toHttpError(error).body.error));
    sse.end();
    return undefined;
  }
}
