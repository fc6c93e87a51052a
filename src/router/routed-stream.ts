import type { GenerateResponse, RequestEnd } from "../protocol/index.js";

/** A stream of one item: a request that ended in its prefill. */
export async function* once(end: RequestEnd): AsyncGenerator<GenerateResponse> {
  yield end;
}

/** Passes a stream through, telling `onEnd` about its `request-end`. */
export async function* tapEnd(
  source: AsyncIterable<GenerateResponse>,
  onEnd: (end: RequestEnd) => void,
): AsyncGenerator<GenerateResponse> {
  for await (const item of source) {
    if (item.type === "request-end") onEnd(item);
    yield item;
  }
}

/**
 * Wraps a worker's stream: each item is checked (`check` throws on a malformed one, and the call is
 * then cancelled), `release` runs exactly once when it ends, fails or is abandoned, and
 * `firstToken` on its first token.
 */
export function tracked(
  source: AsyncIterable<unknown>,
  release: () => void,
  firstToken: () => void,
  check: (item: unknown) => GenerateResponse,
): AsyncIterable<GenerateResponse> {
  let released = false;
  let sawToken = false;
  const releaseOnce = (): void => {
    if (!released) {
      released = true;
      release();
    }
  };
  return {
    [Symbol.asyncIterator](): AsyncIterator<GenerateResponse> {
      const inner = source[Symbol.asyncIterator]();
      return {
        async next() {
          let result: IteratorResult<unknown>;
          try {
            result = await inner.next();
          } catch (error) {
            releaseOnce();
            throw error;
          }
          if (result.done) {
            releaseOnce();
            return { done: true, value: undefined };
          }
          let response: GenerateResponse;
          try {
            response = check(result.value);
          } catch (error) {
            releaseOnce();
            await inner.return?.();
            throw error;
          }
          if (!sawToken && response.type === "token-delta") {
            sawToken = true;
            firstToken();
          }
          return { done: false, value: response };
        },
        async return(value?: unknown) {
          releaseOnce();
          await inner.return?.();
          return { done: true, value: value as GenerateResponse };
        },
      };
    },
  };
}
