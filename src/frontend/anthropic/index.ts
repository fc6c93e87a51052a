export { ANTHROPIC_PATHS, handleCountTokens, handleMessages, sendAnthropicDenial } from "./messages-route.js";
