const WORDS = ["river", "stone", "light", "north", "paper", "glass", "cloud", "ember", "field", "tower"];

/**
 * A prompt of exactly `characters` characters of plain words, led by a prefix of its own (`prompt
 * <seed>: `) so no two seeds share a first KV block: none is a cache hit for another.
 */
export function longPrompt(seed: number, characters: number): string {
  let text = `prompt ${seed}: `;
  for (let i = 0; text.length < characters; i++) text += `${WORDS[(i * 7 + seed) % WORDS.length]} `;
  return text.slice(0, characters);
}
