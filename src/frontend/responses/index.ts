export { handleResponses } from "./responses-route.js";
