export { handleCompletions } from "./completions-route.js";
