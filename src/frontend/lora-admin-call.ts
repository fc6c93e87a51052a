import { ArmatureError, type LoraAdminRequest, loraAdapterListSchema, subjects } from "../protocol/index.js";
import type { Router, WorkerView } from "../router/index.js";

/** Asks one worker to load or drop an adapter; resolves with the adapters it serves after. */
export async function callLoraAdmin(router: Router, worker: WorkerView, request: LoraAdminRequest): Promise<readonly string[]> {
  const { requests, invalidMessages } = router.runtime;
  const address = subjects.lora(worker.id);
  for await (const item of requests.call(address, request)) {
    return invalidMessages.check("lora-adapters", loraAdapterListSchema, item, address).names;
  }
  throw new ArmatureError("WORKER_UNAVAILABLE", `worker ${worker.id} did not answer the adapter change`, { retryable: true });
}
