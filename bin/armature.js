#!/usr/bin/env node
// Entry point for `npx armature …`: runs the TypeScript CLI through module hooks of its own
// (bin/typescript-hooks.js: esbuild strips the types, no names kept), so there is no build step.
import { register } from "node:module";

process.setSourceMapsEnabled(true);
register("./typescript-hooks.js", import.meta.url);
const { main } = await import("../src/cli/main.ts");
const code = await main(process.argv.slice(2));
// A failed command exits at once, whatever it left open; a clean one has closed everything itself.
if (code !== 0) process.exit(code);
process.exitCode = code;
