/**
 * Prompts of whole blocks that no earlier call of the same maker produced (token ids 40–129, in
 * every test vocabulary): what the engine-server tests send so that no cache already holds them.
 */
export function freshPrompts(blockSize: number): (blocks: number) => number[] {
  let nonce = 0;
  return (blocks) => {
    nonce++;
    return Array.from({ length: blocks * blockSize }, (_, i) => 40 + ((nonce * 13 + i * 7) % 90));
  };
}
