import assert from "node:assert/strict";
import { test } from "node:test";
import { resolvePlannerCommandOptions } from "./planner-command-options.js";

const planes = ["--bus", "nats://127.0.0.1:4222", "--discovery", "etcd://127.0.0.1:2379"];

test("own flags, shared planner flags and one worker flag group: an aggregated local pool", () => {
  const o = resolvePlannerCommandOptions(
    [
      ...planes,
      "--port",
      "9100",
      "--slo-ttft=1",
      "--max-workers",
      "3",
      "--planner-advisory",
      "--",
      "--engine",
      "mocker",
      "--speedup-ratio",
      "10",
    ],
    {},
  );
  assert.equal(o.port, 9100);
  assert.equal(o.host, "127.0.0.1");
  assert.equal(o.serve.bus, "nats://127.0.0.1:4222");
  assert.equal(o.planner.mode, "load", "load without --planner");
  assert.equal(o.planner.layout, "aggregated");
  assert.equal(o.planner.sloTtftMs, 1);
  assert.equal(o.planner.maxWorkers, 3);
  assert.equal(o.planner.advisory, true);
  assert.deepEqual(o.roles, ["aggregated"]);
  assert.deepEqual(o.connector, { kind: "local", workerArgs: { aggregated: ["--engine", "mocker", "--speedup-ratio", "10"] } });
});

test("two worker flag groups with --role prefill and --role decode: a disaggregated deployment", () => {
  const o = resolvePlannerCommandOptions(
    [
      ...planes,
      "--min-workers",
      "1",
      "--",
      "--role",
      "prefill",
      "--engine",
      "mocker",
      "--",
      "--role=decode",
      "--engine",
      "mocker",
    ],
    {},
  );
  assert.equal(o.planner.layout, "disaggregated");
  assert.deepEqual(o.roles, ["prefill", "decode"]);
  assert.deepEqual(o.connector, {
    kind: "local",
    workerArgs: { prefill: ["--role", "prefill", "--engine", "mocker"], decode: ["--role=decode", "--engine", "mocker"] },
  });
});

test("kubernetes: Deployments by role and a namespace", () => {
  const o = resolvePlannerCommandOptions(
    [
      ...planes,
      "--connector",
      "kubernetes",
      "--k8s-deployments",
      "prefill=llama-prefill, decode=llama-decode",
      "--k8s-namespace",
      "serving",
    ],
    {},
  );
  assert.deepEqual(o.connector, {
    kind: "kubernetes",
    deployments: { prefill: "llama-prefill", decode: "llama-decode" },
    namespace: "serving",
  });
  assert.equal(o.planner.layout, "disaggregated");
});

test("bad flags end with a message naming the flag", () => {
  const cases: [string[], RegExp][] = [
    [
      [...planes, "--engine", "mocker"],
      /^--engine is not a flag of armature planner: the flags of the workers it starts go after --/,
    ],
    [[...planes, "--nonsense", "--", "--engine", "mocker"], /^--nonsense is not a flag of armature planner/],
    [
      [...planes, "--planner-quantile", "0.9", "--", "--engine", "mocker"],
      /^--planner-quantile is not a flag of armature planner: it judges the mean TTFT and ITL the frontends report/,
    ],
    [[...planes], /^--connector local needs the flags of the workers it starts after --/],
    [
      [...planes, "--", "--engine", "mocker", "--", "--engine", "mocker"],
      /two worker flag groups after -- have --role aggregated/,
    ],
    [[...planes, "--", "--role", "decode"], /^the worker flag groups after --: pools decode are not a deployment/],
    [[...planes, "--", "--role", "both"], /--role 'both': use aggregated, prefill or decode/],
    [[...planes, "--", "--engine", "mocker", "--"], /an empty worker flag group after --/],
    [[...planes, "--connector", "docker", "--", "--engine", "mocker"], /^--connector must be local or kubernetes, got 'docker'/],
    [[...planes, "--connector", "kubernetes"], /^--connector kubernetes needs --k8s-deployments ROLE=NAME/],
    [[...planes, "--connector", "kubernetes", "--k8s-deployments", "gpu=x"], /^--k8s-deployments: 'gpu=x' is not ROLE=NAME/],
    [
      [...planes, "--connector", "kubernetes", "--k8s-deployments", "aggregated=a", "--", "--engine", "mocker"],
      /takes no worker flags after --/,
    ],
    [
      [...planes, "--k8s-namespace", "x", "--", "--engine", "mocker"],
      /^--k8s-deployments and --k8s-namespace need --connector kubernetes/,
    ],
    [[...planes, "--port", "70000", "--", "--engine", "mocker"], /^--port must be a port number from 0 to 65535/],
    [[...planes, "--slo-ttft", "fast", "--", "--engine", "mocker"], /^--slo-ttft \(ARMATURE_SLO_TTFT\) must be a number/],
    [[...planes, "--planner", "sla", "--", "--engine", "mocker"], /^--profile is required with --planner sla/],
    [
      [...planes, "--min-workers", "0", "--", "--engine", "mocker"],
      /^--min-workers 0 is not served by armature planner yet: its frontends are other processes/,
    ],
    [
      [...planes, "--min-workers", "2", "--max-workers", "3", "--", "--role", "prefill", "--", "--role", "decode"],
      /--min-workers \(2\) for each of the prefill and decode pools needs 4 workers/,
    ],
  ];
  for (const [argv, message] of cases) {
    assert.throws(
      () => resolvePlannerCommandOptions(argv, {}),
      (e: unknown) => (e as { code?: string }).code === "CONFIG_INVALID" && message.test((e as Error).message),
      `${argv.join(" ")} → ${String(message)}`,
    );
  }
});

test("--predictor-period and its environment twin reach the planner's options; a bad value is refused by name", () => {
  const worker = ["--", "--engine", "mocker"];
  assert.deepEqual(resolvePlannerCommandOptions([...planes, ...worker], {}).planner.recurrence, { kind: "auto" });
  assert.deepEqual(resolvePlannerCommandOptions([...planes, "--predictor-period", "off", ...worker], {}).planner.recurrence, {
    kind: "off",
  });
  // 1,800 s at the default 60-s interval: 30 readings.
  assert.deepEqual(
    resolvePlannerCommandOptions([...planes, ...worker], { ARMATURE_PREDICTOR_PERIOD: "1800" }).planner.recurrence,
    { kind: "fixed", readings: 30 },
  );
  assert.throws(
    () => resolvePlannerCommandOptions([...planes, "--predictor-period", "hourly", ...worker], {}),
    /--predictor-period must be auto, off or a period in seconds, got "hourly"/,
  );
});
