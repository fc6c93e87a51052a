import type { VirtualClock } from "../runtime/index.js";

/** Virtual time moved per turn of the loop below; timers fire at their own instants whatever it is. */
const STEP_MS = 1000;

/**
 * Moves `clock` forward until `until` settles, then returns its value (or throws its error).
 * Workers keep timers forever (lease keep-alives, load reports, discovery sweeps), so a replay's
 * clock is never idle: it runs until the work is done instead. `check` runs between steps and may
 * throw to stop.
 */
export async function runClockUntil<T>(clock: VirtualClock, until: Promise<T>, check?: () => void): Promise<T> {
  let settled = false;
  const done = until.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  await clock.runUntilIdle(0);
  while (!settled) {
    check?.();
    await clock.advance(STEP_MS);
  }
  await done;
  return until;
}
