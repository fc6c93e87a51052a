// The fleet dashboard: polls GET /v1/fleet and draws it. Plain browser script, no build step;
// every value is written with textContent, never as HTML.
(() => {
  const params = new URLSearchParams(location.search);
  const intervalMs = Math.max(250, Number(params.get("interval")) || 2000);
  const KEY_STORE = "armature-dashboard-key";
  let apiKey = sessionStorage.getItem(KEY_STORE) ?? "";
  const fragmentKey = /(?:^#|&)key=([^&]+)/.exec(location.hash);
  if (fragmentKey) {
    apiKey = decodeURIComponent(fragmentKey[1]);
    sessionStorage.setItem(KEY_STORE, apiKey);
    history.replaceState(null, "", location.pathname + location.search);
  }

  const $ = (id) => document.getElementById(id);
  const fmt = (value, digits = 1) =>
    value === null || value === undefined || Number.isNaN(value)
      ? "–"
      : Number(value).toLocaleString("en-US", { maximumFractionDigits: digits });
  const pct = (share) => (share === null || share === undefined ? "–" : `${(share * 100).toFixed(1)}%`);
  // Latencies: three significant digits below 10 ms, whole tenths above.
  const lat = (v) => (v < 10 ? Number(v.toPrecision(3)).toString() : fmt(v));
  const ms = (p) => (p ? `${lat(p.p50)} / ${lat(p.p90)} / ${lat(p.p99)} ms` : "–");
  const bytes = (perSecond) => {
    if (perSecond === null || perSecond === undefined) return "–";
    const units = ["B", "KB", "MB", "GB"];
    let value = perSecond;
    let unit = 0;
    while (value >= 1000 && unit < units.length - 1) {
      value /= 1000;
      unit++;
    }
    return `${fmt(value)} ${units[unit]}/s`;
  };
  const clock = (atMs) => new Date(atMs).toLocaleTimeString("en-GB", { hour12: false });

  function cell(row, text, className) {
    const td = document.createElement("td");
    td.textContent = text;
    if (className) td.className = className;
    row.appendChild(td);
    return td;
  }

  function fillRows(tbody, items, makeRow) {
    tbody.replaceChildren(...items.map(makeRow));
  }

  function keyValueRows(table, pairs) {
    fillRows(table.tBodies[0], pairs, ([label, value]) => {
      const row = document.createElement("tr");
      const th = document.createElement("th");
      th.textContent = label;
      row.appendChild(th);
      cell(row, value);
      return row;
    });
  }

  function usageBar(td, share) {
    const bar = document.createElement("span");
    bar.className = "bar";
    const fill = document.createElement("span");
    fill.style.width = `${Math.min(100, Math.max(0, (share ?? 0) * 100))}%`;
    bar.appendChild(fill);
    td.prepend(bar);
  }

  function renderWorkers(fleet) {
    $("workers-count").textContent = `(${fleet.workers.length})`;
    fillRows($("workers").tBodies[0], fleet.workers, (w) => {
      const row = document.createElement("tr");
      row.dataset.workerId = w.id;
      cell(row, w.id, "worker-id");
      cell(row, w.role);
      cell(row, w.loras.served.length > 0 ? `${w.model} + ${w.loras.served.join(", ")}` : w.model);
      cell(row, [w.engine, w.engineUrl ?? (w.backend !== w.engine ? w.backend : null)].filter(Boolean).join(" · "));
      cell(row, w.state, `state-${w.state}`);
      cell(row, String(w.requestsInFlight));
      cell(row, w.activeRequests === null ? "–" : `${w.activeRequests} · ${w.waitingRequests}`);
      const kv = cell(row, w.kv.activeBlocks === null ? `– / ${w.kv.totalBlocks}` : `${w.kv.activeBlocks} / ${w.kv.totalBlocks}`);
      usageBar(kv, w.kv.usage);
      const tiers = w.kv.indexedBlocks;
      cell(
        row,
        tiers
          ? Object.entries(tiers)
              .map(([tier, blocks]) => `${tier} ${blocks}`)
              .join(" · ")
          : "–",
      );
      const routed = fleet.routing.byWorker[w.id];
      cell(row, String(routed?.requests ?? 0));
      cell(row, pct(routed?.overlapShare ?? null));
      return row;
    });
  }

  function renderTiles(fleet) {
    const t = fleet.traffic;
    $("stat-rate").textContent = fmt(t.requestsPerSecond, 2);
    $("stat-requests").textContent = String(t.requests);
    $("stat-errors").textContent = String(t.errors);
    $("stat-tokens").textContent = fmt(t.outputTokensPerSecond);
    $("stat-ttft").textContent = ms(t.ttftMs);
    $("stat-itl").textContent = ms(t.itlMs);
    $("stat-inflight").textContent = `${fleet.frontend.requestsInFlight} · ${fleet.frontend.queuedRequests}`;
  }

  function renderKvAndDisaggregation(fleet) {
    const hits = fleet.kvHitRate;
    keyValueRows($("kv-hits"), [
      ["router's overlap (predicted)", pct(hits.routerOverlap)],
      ["cached on the device", pct(hits.device)],
      ["loaded back from lower tiers", pct(hits.lowerTiers)],
      ...Object.entries(hits.byTier ?? {}).map(([tier, share]) => [`block manager hits: ${tier}`, pct(share)]),
    ]);
    const d = fleet.disaggregation;
    const perKey = (rates, show) =>
      rates && Object.keys(rates).length > 0
        ? Object.entries(rates)
            .map(([key, value]) => `${key} ${show(value)}`)
            .join(" · ")
        : "–";
    keyValueRows($("disaggregation"), [
      ["disaggregated requests/s", fmt(d.disaggregatedPerSecond, 2)],
      ["prefills/s by where", perKey(d.prefillsPerSecond, (v) => fmt(v, 2))],
      ["KV moved", perKey(d.transferBytesPerSecond, bytes)],
      ["KV not moved (held already)", perKey(d.savedBytesPerSecond, bytes)],
      ["local prefill fallbacks/s", perKey(d.localFallbacksPerSecond, (v) => fmt(v, 2))],
      ["mean transfer time", d.meanTransferMs === null ? "–" : `${fmt(d.meanTransferMs, 2)} ms`],
    ]);
  }

  function renderRoutes(fleet) {
    fillRows($("routes").tBodies[0], fleet.routing.recent, (r) => {
      const row = document.createElement("tr");
      cell(row, clock(r.atMs));
      cell(row, r.model);
      cell(row, r.workerId, "worker-id");
      cell(row, r.prefillWorkerId ?? "–");
      cell(row, r.overlapBlocks === undefined || r.overlapBlocks === null ? "–" : String(r.overlapBlocks));
      cell(row, String(r.promptTokens));
      cell(row, pct(r.overlapShare));
      return row;
    });
  }

  function renderPlanner(planner) {
    const pools = planner?.pools ? Object.entries(planner.pools) : [];
    $("planner-summary").textContent = planner
      ? `${planner.mode} mode${planner.advisory ? " (advisory)" : ""}, ${planner.layout ?? ""} · SLO TTFT ${fmt(planner.sloTtftMs)} ms, ITL ${fmt(planner.sloItlMs)} ms`
      : "No planner sizes this deployment (start it with --planner load or --planner sla).";
    keyValueRows(
      $("planner-pools"),
      pools.map(([pool, p]) => [`${pool} workers: desired · ready · floor`, `${p.desired} · ${p.ready} · ${p.floor}`]),
    );
    $("planner-decisions").hidden = !planner;
    fillRows($("planner-decisions").tBodies[0], planner?.decisions ?? [], (d) => {
      const row = document.createElement("tr");
      // The planner's clock counts from its start (or, in a replay, the trace's).
      cell(row, `+${fmt(d.atMs / 1000)} s`);
      cell(row, d.loop);
      cell(row, d.pool);
      cell(row, `${d.from} → ${d.to}`);
      cell(row, d.action);
      cell(row, d.applied ? "yes" : "no");
      cell(row, d.reason);
      return row;
    });
  }

  function renderBatches(batches) {
    $("batches-summary").textContent =
      batches === null
        ? "The Batch API is off on this frontend (--batch-dir off)."
        : batches.length === 0
          ? "No batches yet (POST /v1/batches)."
          : `The ${batches.length} newest batches of this key.`;
    $("batches").hidden = !batches || batches.length === 0;
    fillRows($("batches").tBodies[0], batches ?? [], (b) => {
      const row = document.createElement("tr");
      cell(row, b.id);
      cell(row, b.endpoint);
      cell(row, b.status);
      cell(row, `${b.completed + b.failed} / ${b.total}`);
      cell(row, String(b.failed));
      cell(row, b.total > 0 ? pct((b.completed + b.failed) / b.total) : "–");
      return row;
    });
  }

  const charts = {};
  // series: [label, colour, scale?]; a second scale gets its own axis on the right.
  function chart(id, series, data) {
    const element = $(id);
    const width = Math.max(300, element.clientWidth || 400);
    if (!charts[id]) {
      const scales = [...new Set(series.map(([, , scale]) => scale ?? "y"))];
      charts[id] = new uPlot(
        {
          width,
          height: 180,
          series: [
            {},
            ...series.map(([label, stroke, scale]) => ({ label, stroke, scale: scale ?? "y", width: 1.5, spanGaps: true })),
          ],
          axes: [
            { stroke: "#8b98a5" },
            ...scales.map((scale, i) => ({ scale, stroke: "#8b98a5", side: i === 0 ? 3 : 1, grid: { show: i === 0 } })),
          ],
        },
        data,
        element,
      );
    } else {
      charts[id].setData(data);
      if (Math.abs(charts[id].width - width) > 4) charts[id].setSize({ width, height: 180 });
    }
  }

  function renderCharts(fleet) {
    const s = fleet.series;
    const t = s.map((p) => p.t);
    chart(
      "chart-rate",
      [
        ["requests/s", "#4aa3ff"],
        ["tokens/s", "#3fb950", "tokens"],
      ],
      [t, s.map((p) => p.requestsPerSecond), s.map((p) => p.outputTokensPerSecond)],
    );
    chart(
      "chart-ttft",
      [
        ["p50", "#4aa3ff"],
        ["p99", "#f85149"],
      ],
      [t, s.map((p) => p.ttftP50Ms), s.map((p) => p.ttftP99Ms)],
    );
    chart(
      "chart-itl",
      [
        ["p50", "#4aa3ff"],
        ["p99", "#f85149"],
      ],
      [t, s.map((p) => p.itlP50Ms), s.map((p) => p.itlP99Ms)],
    );
  }

  function render(fleet) {
    renderTiles(fleet);
    renderWorkers(fleet);
    renderKvAndDisaggregation(fleet);
    renderRoutes(fleet);
    renderPlanner(fleet.planner);
    renderBatches(fleet.batches);
    renderCharts(fleet);
    const f = fleet.frontend;
    $("status").textContent =
      `updated ${clock(Date.parse(fleet.generatedAt))} · router ${f.routerPolicy} · up ${f.uptimeSeconds} s · every ${intervalMs / 1000} s`;
    document.body.dataset.updates = String(Number(document.body.dataset.updates ?? 0) + 1);
  }

  async function poll() {
    try {
      const response = await fetch("/v1/fleet", { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {} });
      if (response.status === 401) {
        $("key-form").hidden = false;
        $("status").textContent = apiKey ? "that API key was refused" : "an API key is needed";
      } else if (!response.ok) {
        $("status").textContent = `GET /v1/fleet answered ${response.status}`;
      } else {
        $("key-form").hidden = true;
        render(await response.json());
      }
    } catch (error) {
      $("status").textContent = `cannot reach the frontend: ${error.message}`;
    }
    setTimeout(poll, intervalMs);
  }

  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    apiKey = $("key-input").value.trim();
    sessionStorage.setItem(KEY_STORE, apiKey);
  });
  poll();
})();
