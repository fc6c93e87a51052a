/** Text the tiny model's BPE merges are learned from: plain English about serving models. */
export const TINY_CORPUS = `
The quick brown fox jumps over the lazy dog. Hello world, this is a tiny model that armature
writes for itself so that everything works with nothing downloaded. A request arrives at the
frontend, which applies the chat template and turns the text into tokens. The router looks at
the tokens, finds the worker that already holds the longest prefix in its cache, and sends the
request there. The worker runs the model, one token at a time, and streams the tokens back. The
frontend turns the tokens into text again and sends them to the client as they come.
What is the capital of France? The capital of France is Paris. What is two plus two? It is four.
Tell me a story about a robot who learns to paint. Once upon a time there was a robot in a small
town by the sea. Every morning it watched the light on the water and tried to remember the colors.
Write a poem about the ocean. The ocean is deep and blue, the waves come in and out, the wind is
cold and the sun is warm. Please answer in one short sentence. Thank you for your help.
Numbers like 1, 2, 3, 10, 42, 100 and 2048 appear in text too, and so do symbols: {"key": "value"}.
`;
