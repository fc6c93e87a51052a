#!/usr/bin/env node
// Entry point for `npx armature …`: runs the TypeScript CLI through tsx, so there is no build step.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
