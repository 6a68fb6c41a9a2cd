/*
 * kevald dashboard (docs/dashboard.md). A hash-routed page over the
 * /v1/dashboard/* JSON routes; links are shareable (#/run/r17?from=3).
 * Charts are uPlot. Every figure shown carries data-fig="name" so the
 * browser suite (tests/browser/) can compare it with the API's JSON.
 *
 * Everything that comes from the server (run ids, task names, sources,
 * logs) is inserted as text, never as HTML. A token, when the server wants
 * one, lives in sessionStorage and travels as an Authorization header only.
 */
(function () {
  "use strict";

  var TOKEN_KEY = "kevald-token";
  var REFRESH_MS = 10000;
  var VERDICT_COLORS = {
    correct: "#1f9d55", incorrect: "#e07b24", compile_error: "#d64545", runtime_error: "#8e44ad",
    timeout: "#8c6d46", rejected: "#667085", internal_error: "#1d2430", compiled: "#2f6fde",
    cancelled: "#b0b7c3"
  };
  var PALETTE = ["#2f6fde", "#e07b24", "#1f9d55", "#d64545", "#8e44ad", "#8c6d46", "#0e9aa7", "#c2185b"];

  var view = document.getElementById("view");
  var charts = [];
  var timer = null;
  var generation = 0;

  /* ---- formatting (tests/browser/test_dashboard.py mirrors these) ---- */

  function fmtInt(v) { return v === null || v === undefined ? "–" : String(Math.round(v)); }
  function fmtPct(v) { return v === null || v === undefined ? "–" : (v * 100).toFixed(1) + "%"; }
  function fmtX(v) { return v === null || v === undefined ? "–" : Number(v).toFixed(2) + "×"; }
  function fmtMs(v) {
    if (v === null || v === undefined) return "–";
    return (v < 0.1 ? Number(v).toFixed(4) : v < 10 ? Number(v).toFixed(3) : Number(v).toFixed(1)) + " ms";
  }
  function fmtNum(v, d) { return v === null || v === undefined ? "–" : Number(v).toFixed(d); }
  function fmtTime(t) {
    if (t === null || t === undefined) return "–";
    var d = typeof t === "number" ? new Date(t * 1000) : new Date(t);
    return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }
  function fmtAge(t, now) {
    if (t === null || t === undefined) return "–";
    var s = Math.max(0, now - t);
    return s < 120 ? s.toFixed(0) + " s" : s < 7200 ? (s / 60).toFixed(0) + " min" : (s / 3600).toFixed(1) + " h";
  }
  function stepText(s) { return s === null || s === undefined ? "(none)" : String(s); }
  function taskText(t) { return t === null || t === undefined || t === "" ? "(no task)" : t; }

  /* ---- DOM ---- */

  function h(tag, attrs) {
    var el = document.createElement(tag);
    if (attrs) {
      Object.keys(attrs).forEach(function (k) {
        var v = attrs[k];
        if (v === null || v === undefined || v === false) return;
        if (k === "text") el.textContent = v;
        else if (k === "cls") el.className = v;
        else if (k.slice(0, 2) === "on") el.addEventListener(k.slice(2), v);
        else el.setAttribute(k, v === true ? "" : v);
      });
    }
    for (var i = 2; i < arguments.length; i++) add(el, arguments[i]);
    return el;
  }
  function add(el, c) {
    if (c === null || c === undefined || c === false) return;
    if (Array.isArray(c)) { c.forEach(function (x) { add(el, x); }); return; }
    el.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
  function fig(name, text, tag) { return h(tag || "span", { "data-fig": name, text: text }); }
  function tile(label, name, text, note) {
    return h("div", { cls: "tile" }, h("div", { cls: "label", text: label }),
      h("div", { cls: "value", "data-fig": name, text: text }), note ? h("div", { cls: "note", text: note }) : null);
  }
  function card(title, body, extra) { return h("section", { cls: "card" + (extra ? " " + extra : "") }, h("h2", { text: title }), body); }
  function badge(verdict) { return h("span", { cls: "badge v-" + (verdict || "pending"), text: verdict || "pending" }); }
  function link(href, text, attrs) { var a = h("a", attrs || {}); a.href = href; a.textContent = text; return a; }
  function subLink(id) { return link("#/submission/" + id, "#" + id); }
  function runLink(id) { return link("#/run/" + encodeURIComponent(id), id); }
  function taskLink(t) { return t ? link("#/task/" + encodeURIComponent(t), t) : h("span", { text: "(no task)" }); }
  function table(head, rows, attrs) {
    return h("table", attrs || {}, h("thead", null, h("tr", null, head.map(function (c) {
      return typeof c === "string" ? h("th", { text: c }) : h("th", { cls: c.cls, text: c.text });
    }))), h("tbody", null, rows));
  }
  function td(content, cls, figName) {
    var el = h("td", { cls: cls });
    if (figName) el.setAttribute("data-fig", figName);
    add(el, content);
    return el;
  }
  function empty(text) { return h("p", { cls: "empty", text: text }); }

  /* ---- API ---- */

  function ApiError(status, body) {
    this.status = status;
    this.body = body;
    this.message = (body && (body.detail || body.title)) || ("HTTP " + status);
  }

  function api(path, params) {
    var url = new URL(path, location.origin);
    Object.keys(params || {}).forEach(function (k) {
      var v = params[k];
      if (v !== null && v !== undefined && v !== "") url.searchParams.set(k, v);
    });
    var headers = { Accept: "application/json" };
    var tok = sessionStorage.getItem(TOKEN_KEY);
    if (tok) headers.Authorization = "Bearer " + tok;
    return fetch(url.toString(), { headers: headers }).then(function (r) {
      return r.json().catch(function () { return null; }).then(function (body) {
        if (r.status === 401) {
          showAuth(tok ? "The token was refused: " + ((body && body.detail) || "401") : "");
          throw new ApiError(401, body);
        }
        if (!r.ok) throw new ApiError(r.status, body);
        return body;
      });
    });
  }

  function showAuth(msg) {
    document.getElementById("auth").hidden = false;
    document.getElementById("auth-error").textContent = msg || "";
    document.getElementById("auth-token").focus();
  }

  document.getElementById("auth-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var v = document.getElementById("auth-token").value.trim();
    if (!v) return;
    sessionStorage.setItem(TOKEN_KEY, v);
    document.getElementById("auth-token").value = "";
    document.getElementById("auth").hidden = true;
    route();
  });

  document.getElementById("goto").addEventListener("submit", function (ev) {
    ev.preventDefault();
    var v = document.getElementById("goto-id").value.trim();
    if (/^[1-9][0-9]*$/.test(v)) location.hash = "#/submission/" + v;
  });

  /* ---- charts ---- */

  function chart(el, opts, data) {
    var width = Math.max(320, el.clientWidth || (view.clientWidth - 40));
    var o = Object.assign({ width: width, height: 220, legend: { live: true } }, opts);
    var u = new uPlot(o, data, el);
    charts.push(u);
    return u;
  }

  function chartBox(name) { return h("div", { cls: "chart", "data-chart": name }); }

  function lineSeries(label, color, extra) {
    return Object.assign({ label: label, stroke: color, width: 2, points: { show: false }, spanGaps: false }, extra || {});
  }

  function barSeries(label, color, extra) {
    return Object.assign({ label: label, stroke: color, fill: color, width: 0,
      paths: uPlot.paths.bars({ size: [0.7, 60] }), points: { show: false } }, extra || {});
  }

  window.addEventListener("resize", function () {
    charts.forEach(function (u) {
      var w = u.root.parentNode ? u.root.parentNode.clientWidth : 0;
      if (w > 0) u.setSize({ width: w, height: u.height });
    });
  });

  /* ---- router ---- */

  function parseHash() {
    var hsh = location.hash.replace(/^#\/?/, "");
    var q = hsh.indexOf("?");
    var path = q < 0 ? hsh : hsh.slice(0, q);
    var params = new URLSearchParams(q < 0 ? "" : hsh.slice(q + 1));
    return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params: params };
  }

  function hashWith(base, params) {
    var sp = new URLSearchParams();
    Object.keys(params).forEach(function (k) {
      if (params[k] !== null && params[k] !== undefined && params[k] !== "") sp.set(k, params[k]);
    });
    var s = sp.toString();
    return base + (s ? "?" + s : "");
  }

  function route() {
    var r = parseHash();
    var name = r.parts[0] || "now";
    var gen = ++generation;
    if (timer) { clearTimeout(timer); timer = null; }
    document.querySelectorAll("[data-nav]").forEach(function (a) {
      var n = a.getAttribute("data-nav");
      a.classList.toggle("active", n === name || (n === "runs" && name === "run") || (n === "tasks" && name === "task"));
    });
    document.body.removeAttribute("data-ready");
    document.body.setAttribute("data-view", name);
    document.body.setAttribute("data-hash", location.hash);
    var p;
    if (name === "now") p = viewNow(r);
    else if (name === "runs") p = viewRuns(r);
    else if (name === "run" && r.parts[1]) p = viewRun(r);
    else if (name === "tasks") p = viewTasks(r);
    else if (name === "task" && r.parts[1]) p = viewTask(r);
    else if (name === "submission" && r.parts[1]) p = viewSubmission(r);
    else p = Promise.reject(new ApiError(404, { detail: "no such view: #/" + r.parts.join("/") }));
    p.then(function (content) {
      if (gen !== generation) return;
      render(content.el);
      if (content.after) content.after();
      document.getElementById("updated").textContent = "updated " + fmtTime(Date.now() / 1000);
      document.body.setAttribute("data-ready", "1");
      if (content.refresh) timer = setTimeout(function () { if (gen === generation) route(); }, REFRESH_MS);
    }).catch(function (e) {
      if (gen !== generation) return;
      if (!(e instanceof ApiError)) { console.error(e); e = new ApiError(0, { detail: String(e) }); }
      render(h("div", { cls: "card" }, h("h1", { text: e.status === 401 ? "A token is needed" : "Nothing to show" }),
        h("p", { cls: "error", "data-fig": "error", text: e.message })));
      document.body.setAttribute("data-ready", "error");
    });
  }

  function render(el) {
    charts.forEach(function (u) { u.destroy(); });
    charts = [];
    view.replaceChildren(el);
  }

  window.addEventListener("hashchange", route);

  /* ---- Now ---- */

  function viewNow(r) {
    var win = r.params.get("window") || "60";
    return api("/v1/dashboard/now", { window: win }).then(function (d) {
      var s = d.series, q = d.queue, gpus = d.workers.gpus || [], cw = d.workers.compile || {};
      var evTotal = s.evaluations.reduce(function (a, b) { return a + b; }, 0);
      var gpuRestarts = gpus.reduce(function (a, g) { return a + (g.restarts || 0); }, 0);
      var el = h("div", null,
        h("h1", { text: "Now" }),
        h("p", { cls: "sub" }, "Queue, workers and the last ", fig("window", String(d.window_minutes)), " minutes. ",
          windowPicker(win)),
        h("div", { cls: "tiles" },
          tile("Queued", "queue.queued", fmtInt(q.queued)),
          tile("Compiling", "queue.compiling", fmtInt(q.compiling)),
          tile("Waiting for a GPU", "queue.compiled", fmtInt(q.compiled)),
          tile("Running", "queue.running", fmtInt(q.running)),
          tile("Oldest waiting", "queue.oldest", fmtAge(q.oldest_created_at, d.now)),
          tile("Evaluations / min", "evaluations.per_min", fmtNum(evTotal / d.window_minutes, 1),
            fmtInt(evTotal) + " in the window"),
          tile("Cache hit rate", "cache.hit_rate", fmtPct(d.cache.hit_rate),
            fmtInt(d.cache.hits) + " hits, " + fmtInt(d.cache.misses) + " misses"),
          tile("Worker restarts", "restarts.total", fmtInt((cw.restarts || 0) + gpuRestarts),
            "compile " + fmtInt(cw.restarts || 0) + ", GPU " + fmtInt(gpuRestarts)),
          tile("Submissions", "totals.submissions", fmtInt(d.totals.submissions))),
        h("div", { cls: "grid" },
          card("Evaluations per minute, by verdict", chartBox("verdicts")),
          card("GPU busy per GPU", gpus.length || Object.keys(s.gpu_busy_fraction).length ? chartBox("gpu")
            : empty("No GPU on this host: compile-only.")),
          card("Compile cache hit rate", chartBox("cache")),
          card("Mean latency (accepted to result)", chartBox("latency"))),
        h("div", { cls: "grid" },
          card("GPUs", gpus.length ? table(["GPU", "name", "state", { text: "workers", cls: "num" },
            { text: "restarts", cls: "num" }, { text: "busy (s)", cls: "num" }], gpus.map(function (g) {
              return h("tr", { "data-gpu": String(g.index) }, td(String(g.index)), td(g.name || "–"), td(g.state),
                td(fmtInt(g.workers), "num"), td(fmtInt(g.restarts), "num", "gpu.restarts"),
                td(fmtNum(g.busy_s, 1), "num"));
            })) : empty("none")),
          card("Verdicts (all time)", verdictBars(d.totals.by_verdict))));
      return { el: el, refresh: true, after: function () { nowCharts(d); } };
    });
  }

  function windowPicker(cur) {
    var sel = h("select", { "aria-label": "window" }, ["15", "60", "360", "1440"].map(function (w) {
      var o = h("option", { value: w, text: w === "1440" ? "1 day" : w === "360" ? "6 hours" : w + " min" });
      if (w === cur) o.selected = true;
      return o;
    }));
    sel.addEventListener("change", function () { location.hash = hashWith("#/now", { window: sel.value }); });
    return sel;
  }

  function verdictBars(byVerdict) {
    var keys = Object.keys(byVerdict || {}).sort(function (a, b) { return byVerdict[b] - byVerdict[a]; });
    if (!keys.length) return empty("No finished submission yet.");
    var max = Math.max.apply(null, keys.map(function (k) { return byVerdict[k]; }));
    return table(["verdict", { text: "n", cls: "num" }, ""], keys.map(function (k) {
      var bar = h("span", { cls: "bar" });
      bar.style.width = Math.max(2, 240 * byVerdict[k] / max) + "px";
      bar.style.background = VERDICT_COLORS[k] || "#98a2b3";
      return h("tr", { "data-verdict": k }, td(badge(k)), td(fmtInt(byVerdict[k]), "num", "verdict.n"), td(bar));
    }));
  }

  function nowCharts(d) {
    var s = d.series, x = s.minute_start;
    var names = Object.keys(s.verdicts).sort();
    // Stacked bars: draw the running totals, largest first, so each verdict shows as its own band.
    var raw = names.map(function (n) { return s.verdicts[n]; });
    var cum = [], acc = x.map(function () { return 0; });
    raw.forEach(function (arr) { acc = acc.map(function (a, i) { return a + arr[i]; }); cum.push(acc.slice()); });
    var order = names.map(function (n, i) { return i; }).reverse();
    var el = view.querySelector('[data-chart="verdicts"]');
    if (el) {
      chart(el, {
        series: [{}].concat(order.map(function (i) {
          return barSeries(names[i], VERDICT_COLORS[names[i]] || "#98a2b3", {
            value: function (u, v, si, di) { return di === null || di === undefined ? "–" : fmtInt(raw[i][di]); }
          });
        })),
        axes: [{}, { label: "per minute" }], scales: { y: { range: function (u, mn, mx) { return [0, Math.max(1, mx)]; } } }
      }, [x].concat(order.map(function (i) { return cum[i]; })));
    }
    el = view.querySelector('[data-chart="gpu"]');
    if (el) {
      var gk = Object.keys(s.gpu_busy_fraction).sort();
      chart(el, {
        series: [{}].concat(gk.map(function (g, i) {
          return lineSeries("GPU " + g, PALETTE[i % PALETTE.length], { fill: PALETTE[i % PALETTE.length] + "22", value: function (u, v) { return fmtPct(v); } });
        })),
        scales: { y: { range: [0, 1] } },
        axes: [{}, { values: function (u, vs) { return vs.map(function (v) { return (v * 100).toFixed(0) + "%"; }); } }]
      }, [x].concat(gk.map(function (g) { return s.gpu_busy_fraction[g]; })));
    }
    el = view.querySelector('[data-chart="cache"]');
    chart(el, {
      series: [{}, lineSeries("hit rate", PALETTE[2], { points: { show: true, size: 5 }, value: function (u, v) { return fmtPct(v); } })],
      scales: { y: { range: [0, 1] } },
      axes: [{}, { values: function (u, vs) { return vs.map(function (v) { return (v * 100).toFixed(0) + "%"; }); } }]
    }, [x, s.cache_hit_rate]);
    el = view.querySelector('[data-chart="latency"]');
    chart(el, {
      series: [{}, lineSeries("mean latency (s)", PALETTE[0], { points: { show: true, size: 5 }, value: function (u, v) { return fmtNum(v, 3); } }),
        lineSeries("mean compile (ms)", PALETTE[1], { scale: "ms", points: { show: true, size: 5 }, value: function (u, v) { return fmtNum(v, 1); } })],
      axes: [{}, { label: "s" }, { scale: "ms", side: 1, label: "ms", grid: { show: false } }]
    }, [x, s.latency_mean_s, s.compile_ms_mean]);
  }

  /* ---- Runs ---- */

  function pager(base, params, offset, limit, nextOffset, count) {
    var prev = h("button", { cls: "plain", text: "‹ newer" });
    var next = h("button", { cls: "plain", text: "older ›" });
    prev.disabled = offset <= 0;
    next.disabled = nextOffset === null || nextOffset === undefined;
    prev.addEventListener("click", function () {
      location.hash = hashWith(base, Object.assign({}, params, { offset: Math.max(0, offset - limit) || "" }));
    });
    next.addEventListener("click", function () {
      location.hash = hashWith(base, Object.assign({}, params, { offset: nextOffset }));
    });
    return h("div", { cls: "pager" }, prev, next,
      h("span", { text: count ? "rows " + (offset + 1) + "–" + (offset + count) : "no rows here" }));
  }

  function searchForm(base, q, placeholder, extra) {
    var input = h("input", { name: "q", placeholder: placeholder, value: q || "" });
    var f = h("form", { cls: "filters" }, h("label", { text: "filter" }), input, h("button", { type: "submit", text: "Apply" }));
    f.addEventListener("submit", function (ev) {
      ev.preventDefault();
      location.hash = hashWith(base, Object.assign({}, extra || {}, { q: input.value.trim() }));
    });
    return f;
  }

  function viewRuns(r) {
    var q = r.params.get("q") || "", offset = parseInt(r.params.get("offset") || "0", 10) || 0, limit = 50;
    return api("/v1/dashboard/runs", { q: q, limit: limit, offset: offset }).then(function (d) {
      var el = h("div", null, h("h1", { text: "Runs" }),
        h("p", { cls: "sub", text: "RL runs (tags.run_id), latest first. Internal errors are left out of the rates; " +
          "the correct rate counts only submissions whose correctness was checked (mode full)." }),
        searchForm("#/runs", q, "run id contains…"),
        h("section", { cls: "card" }, d.items.length ? table(["run", "mode", { text: "evaluated", cls: "num" },
          { text: "correct", cls: "num" }, { text: "correct rate", cls: "num" }, { text: "compile rate", cls: "num" },
          { text: "steps", cls: "num" }, "last result"], d.items.map(function (x) {
            var mode = runMode(x);
            return h("tr", { "data-run": x.run_id }, td(runLink(x.run_id)), td(modeBadge(mode), null, "run.mode"),
              td(fmtInt(x.evaluated), "num", "run.evaluated"),
              td(mode === "compile" ? "–" : fmtInt(x.correct), "num", "run.correct"),
              td(fmtPct(x.correct_rate), "num", "run.correct_rate"), td(fmtPct(x.compile_rate), "num", "run.compile_rate"),
              td(x.min_step === null ? "–" : x.min_step + "–" + x.max_step, "num"), td(fmtTime(x.last_finished_at)));
          })) : empty("No run yet: tag submissions with tags.run_id."),
          pager("#/runs", { q: q }, offset, limit, d.next_offset, d.items.length)));
      return { el: el };
    });
  }

  /* A run's mode as GET /v1/dashboard/run says it: compile (every sample compile-only), full or mixed. */
  function runMode(x) { return x.compile_mode <= 0 ? "full" : x.compile_mode >= x.evaluated ? "compile" : "mixed"; }
  function modeBadge(mode) {
    return h("span", { cls: "badge mode-" + mode, text: mode === "compile" ? "compile-only" : mode });
  }
  var REWARD_TEXT = "Reward = the trainer's: 0.3 + min(speedup, 10) for a correct kernel (0 when its timing is " +
    "suspicious), 0 for any other verdict; internal errors are dropped (the Python client's default reward()). ";

  function viewRun(r) {
    var id = r.parts[1], from = r.params.get("from") || "", to = r.params.get("to") || "", k = r.params.get("k") || "";
    var cursor = r.params.get("cursor") || "";
    return Promise.all([
      api("/v1/dashboard/run", { id: id, from_step: from, to_step: to, k: k }),
      api("/v1/submissions", { run_id: id, limit: 20, cursor: cursor, include: "result" })
    ]).then(function (res) {
      var d = res[0], subs = res[1], run = d.run;
      var base = "#/run/" + encodeURIComponent(id);
      var fFrom = h("input", { name: "from", size: 6, placeholder: "first", value: from });
      var fTo = h("input", { name: "to", size: 6, placeholder: "last", value: to });
      var fK = h("input", { name: "k", size: 10, placeholder: "1,5,10", value: k });
      var form = h("form", { cls: "filters" }, h("label", { text: "steps from" }), fFrom, h("label", { text: "to" }), fTo,
        h("label", { text: "pass@k, k =" }), fK, h("button", { type: "submit", text: "Apply" }));
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        location.hash = hashWith(base, { from: fFrom.value.trim(), to: fTo.value.trim(), k: fK.value.trim() });
      });
      var ks = d.k, compileOnly = run.mode === "compile";
      var el = h("div", null,
        h("h1", null, "Run ", fig("run.id", run.run_id), " ", h("span", { "data-fig": "run.mode" }, modeBadge(run.mode))),
        h("p", { cls: "sub", text: compileOnly ? "A compile-only run (mode \"compile\"): its kernels were compiled, " +
          "never run, so what it measures is how many compiled; correctness and speed were not checked." :
          REWARD_TEXT + "Distributions are read from histograms with 8 buckets per doubling (within ~5%)." }),
        form,
        h("div", { cls: "tiles" },
          tile("Evaluated", "run.evaluated", fmtInt(run.evaluated)),
          compileOnly ? tile("Compile rate", "run.compile_rate", fmtPct(run.compile_rate), "compile-only: correctness not checked")
            : tile("Correct rate", "run.correct_rate", fmtPct(run.correct_rate),
              run.mode === "mixed" ? "of " + fmtInt(run.checked) + " checked (mode full)" : null),
          compileOnly ? tile("Compiled", "run.compiled", fmtInt(run.compiled))
            : tile("Correct", "run.correct", fmtInt(run.correct)),
          compileOnly ? null : tile("Compile rate", "run.compile_rate", fmtPct(run.compile_rate)),
          tile("Steps", "run.steps", run.min_step === null ? "–" : run.min_step + "–" + run.max_step),
          tile("Internal errors", "run.internal_errors", fmtInt(run.internal_errors), "not counted in rates")),
        h("div", { cls: "grid" },
          card(compileOnly ? "Compile rate per step" : "Correct rate per step (compile rate dashed)", chartBox("correct")),
          card("Verdicts per step", chartBox("step-verdicts")),
          compileOnly ? null : card("Reward per step (median, 25–75 %, 10–90 %, mean)", chartBox("reward")),
          compileOnly ? null : card("Speedup of correct kernels per step (log scale)", chartBox("speedup"))),
        card("Steps", stepTable(d.steps, compileOnly)),
        card(compileOnly ? "Tasks (compile-only: no pass@k)" : "Tasks: pass@k over the checked samples, best kernel so far",
          d.tasks.length ? table(["task",
          { text: "samples", cls: "num" }, { text: "correct", cls: "num" }].concat(ks.map(function (x) {
            return { text: "pass@" + x, cls: "num" };
          })).concat([{ text: "best", cls: "num" }, { text: "at step", cls: "num" }, "kernel"]), d.tasks.map(function (t) {
            return h("tr", { "data-task": t.task === null ? "" : t.task }, td(taskLink(t.task)),
              td(fmtInt(t.samples), "num", "task.samples"), td(fmtInt(t.correct), "num", "task.correct"),
              ks.map(function (x) { return td(fmtPct(t.pass_at_k[String(x)]), "num", "pass@" + x); }),
              td(fmtX(t.best_speedup), "num", "task.best"), td(stepText(t.best_step), "num"),
              td(t.best_id ? subLink(t.best_id) : "–"));
          })) : empty("No task in these steps.")),
        h("div", { cls: "grid" }, card("Submissions of this run (newest first)", submissionList(subs, base,
          { from: from, to: to, k: k }, cursor, yardOf(r.params)))));
      return { el: el, after: function () { runCharts(d); } };
    });
  }

  /* A step's verdicts, most frequent first: "correct 5 · incorrect 2" (tests/browser mirrors this). */
  function verdictMixText(mix) {
    return Object.keys(mix || {}).sort(function (a, b) { return mix[b] - mix[a] || (a < b ? -1 : a > b ? 1 : 0); })
      .map(function (k) { return k + " " + mix[k]; }).join(" · ");
  }
  function verdictMix(mix) {
    var keys = Object.keys(mix || {}).sort(function (a, b) { return mix[b] - mix[a] || (a < b ? -1 : a > b ? 1 : 0); });
    var total = keys.reduce(function (a, k) { return a + mix[k]; }, 0);
    var bar = h("span", { cls: "mixbar" }, keys.map(function (k) {
      var seg = h("span", { title: k + ": " + mix[k] });
      seg.style.width = (100 * mix[k] / Math.max(1, total)) + "%";
      seg.style.background = VERDICT_COLORS[k] || "#98a2b3";
      return seg;
    }));
    return [bar, h("span", { cls: "mixtext", "data-fig": "step.verdicts", text: verdictMixText(mix) })];
  }

  function stepTable(steps, compileOnly) {
    if (!steps.length) return empty("No step.");
    var rows = steps.slice(-12).reverse().map(function (s) {
      return h("tr", { "data-step": s.step === null ? "" : String(s.step) }, td(stepText(s.step), "num"),
        td(fmtInt(s.evaluated), "num", "step.evaluated"),
        compileOnly ? null : td(fmtPct(s.correct_rate), "num", "step.correct_rate"),
        td(fmtPct(s.compile_rate), "num", "step.compile_rate"),
        compileOnly ? null : td(fmtNum(s.mean_reward, 3), "num", "step.mean_reward"),
        compileOnly ? null : td(fmtX(s.geomean_speedup), "num"), td(verdictMix(s.verdicts), "mix"));
    });
    var head = [{ text: "step", cls: "num" }, { text: "evaluated", cls: "num" }];
    if (!compileOnly) head.push({ text: "correct", cls: "num" });
    head.push({ text: "compiled", cls: "num" });
    if (!compileOnly) head.push({ text: "mean reward", cls: "num" }, { text: "geomean speedup", cls: "num" });
    head.push("verdicts");
    return h("div", null, table(head, rows),
      steps.length > 12 ? h("p", { cls: "legend-note", text: "latest 12 of " + steps.length + " steps" }) : null);
  }

  /* ---- yardsticks: what a speedup is against (the result's reward_fields.speedup_vs) ---- */

  var YARDSTICKS = [["reference", "the reference"], ["torch_eager", "torch eager"],
    ["torch_compile", "torch.compile"], ["strongest", "the strongest"]];
  function yardOf(params) {
    var y = params.get("y");
    return YARDSTICKS.some(function (p) { return p[0] === y; }) ? y : "reference";
  }
  /* A correct kernel's speedup against @y: the reference's is the row's own; a PyTorch one comes from
     speedup_vs (null: no baseline for that GPU model, never a guess); the strongest is the smallest of
     those available (the reference's when no baseline exists), as the client's reward() picks it. */
  function yardSpeedup(vs, speedup, y) {
    if (y === "reference") return speedup;
    if (!vs) return y === "strongest" ? speedup : null;
    if (y !== "strongest") return typeof vs[y] === "number" ? vs[y] : null;
    var xs = ["reference", "torch_eager", "torch_compile"].map(function (k) { return vs[k]; })
      .filter(function (v) { return typeof v === "number"; });
    return xs.length ? Math.min.apply(null, xs) : speedup;
  }
  function yardLabel(y) {
    return "speedup vs " + YARDSTICKS.filter(function (p) { return p[0] === y; })[0][1];
  }
  function yardPicker(base, params, y) {
    var sel = h("select", { name: "yardstick", "aria-label": "yardstick" });
    YARDSTICKS.forEach(function (p) {
      var o = h("option", { value: p[0], text: yardLabel(p[0]) });
      if (p[0] === y) o.setAttribute("selected", "");
      sel.appendChild(o);
    });
    sel.addEventListener("change", function () {
      location.hash = hashWith(base, Object.assign({}, params, { y: sel.value === "reference" ? "" : sel.value }));
    });
    return h("p", { cls: "yardstick" }, sel, h("span", { cls: "legend-note", text: " torch eager and torch.compile " +
      "come from the task library's baseline file for the GPU that ran the kernel (none: –); the strongest is " +
      "the smallest speedup of the three." }));
  }

  function submissionList(subs, base, params, cursor, y) {
    y = y || "reference";
    var rows = subs.items.map(function (s) {
      var vs = s.result && s.result.reward_fields ? s.result.reward_fields.speedup_vs : null;
      return h("tr", { "data-id": String(s.id) }, td(subLink(s.id)), td(badge(s.verdict || s.state)),
        td(taskLink(s.task)), td(stepText(s.tags && s.tags.step), "num"),
        td(fmtX(yardSpeedup(vs, s.speedup, y)), "num", "sub.yard_speedup"),
        td(fmtTime(s.finished_at || s.created_at)));
    });
    var next = h("button", { cls: "plain", text: "older ›" });
    next.disabled = subs.next_cursor === null;
    next.addEventListener("click", function () {
      location.hash = hashWith(base, Object.assign({}, params, { cursor: subs.next_cursor, y: y === "reference" ? "" : y }));
    });
    var first = h("button", { cls: "plain", text: "« newest" });
    first.disabled = !cursor;
    first.addEventListener("click", function () {
      location.hash = hashWith(base, Object.assign({}, params, { y: y === "reference" ? "" : y }));
    });
    return h("div", null, yardPicker(base, Object.assign({}, params, { cursor: cursor }), y),
      rows.length ? table(["id", "verdict", "task", { text: "step", cls: "num" },
      { text: yardLabel(y), cls: "num" }, "finished"], rows) : empty("none"), h("div", { cls: "pager" }, first, next));
  }

  function q(s, key, p) { return s.map(function (x) { return x[key] ? x[key][p] : null; }); }

  function runCharts(d) {
    var st = d.steps.filter(function (s) { return s.step !== null; });
    if (!st.length) {
      ["correct", "step-verdicts", "reward", "speedup"].forEach(function (n) {
        var el = view.querySelector('[data-chart="' + n + '"]');
        if (el) el.replaceWith(empty("These submissions carry no tags.step."));
      });
      return;
    }
    var x = st.map(function (s) { return s.step; });
    var xs = { x: { time: false } };
    var stepAxis = { label: "step", incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000] };
    var pctAxis = { values: function (u, vs) { return vs.map(function (v) { return (v * 100).toFixed(0) + "%"; }); } };
    var compileRate = lineSeries("compile rate", VERDICT_COLORS.compiled, { dash: [5, 4], value: function (u, v) { return fmtPct(v); } });
    if (d.run.mode === "compile") {
      chart(view.querySelector('[data-chart="correct"]'), {
        scales: Object.assign({ y: { range: [0, 1] } }, xs),
        series: [{ label: "step" }, Object.assign(compileRate, { dash: null })], axes: [stepAxis, pctAxis]
      }, [x, st.map(function (s) { return s.compile_rate; })]);
    } else {
      chart(view.querySelector('[data-chart="correct"]'), {
        scales: Object.assign({ y: { range: [0, 1] } }, xs),
        series: [{ label: "step" }, lineSeries("correct rate", VERDICT_COLORS.correct, { value: function (u, v) { return fmtPct(v); } }),
          compileRate], axes: [stepAxis, pctAxis]
      }, [x, st.map(function (s) { return s.correct_rate; }), st.map(function (s) { return s.compile_rate; })]);
    }
    // Verdicts per step, stacked as on the Now view: running totals, largest first.
    var names = {};
    st.forEach(function (s) { Object.keys(s.verdicts || {}).forEach(function (k) { names[k] = true; }); });
    names = Object.keys(names).sort();
    var raw = names.map(function (n) { return st.map(function (s) { return (s.verdicts || {})[n] || 0; }); });
    var cum = [], acc = x.map(function () { return 0; });
    raw.forEach(function (arr) { acc = acc.map(function (a, i) { return a + arr[i]; }); cum.push(acc.slice()); });
    var order = names.map(function (n, i) { return i; }).reverse();
    chart(view.querySelector('[data-chart="step-verdicts"]'), {
      scales: Object.assign({ y: { range: function (u, mn, mx) { return [0, Math.max(1, mx)]; } } }, xs),
      series: [{ label: "step" }].concat(order.map(function (i) {
        return barSeries(names[i], VERDICT_COLORS[names[i]] || "#98a2b3", {
          value: function (u, v, si, di) { return di === null || di === undefined ? "–" : fmtInt(raw[i][di]); }
        });
      })),
      axes: [stepAxis, { label: "submissions" }]
    }, [x].concat(order.map(function (i) { return cum[i]; })));
    if (d.run.mode === "compile") return;
    var band = function (key, color) {
      return {
        series: [{ label: "step" }, lineSeries("p10", color, { width: 0 }), lineSeries("p90", color, { width: 0 }),
          lineSeries("p25", color, { width: 0 }), lineSeries("p75", color, { width: 0 }),
          lineSeries("median", color, { width: 2 })],
        bands: [{ series: [2, 1], fill: color + "22" }, { series: [4, 3], fill: color + "44" }]
      };
    };
    var rw = band("reward", PALETTE[0]);
    rw.series.push(lineSeries("mean", PALETTE[1], { dash: [4, 4] }));
    rw.scales = xs;
    rw.axes = [stepAxis, { label: "reward" }];
    chart(view.querySelector('[data-chart="reward"]'), rw, [x, q(st, "reward", "p10"), q(st, "reward", "p90"),
      q(st, "reward", "p25"), q(st, "reward", "p75"), q(st, "reward", "p50"), st.map(function (s) { return s.mean_reward; })]);
    var sp = band("speedup", PALETTE[2]);
    sp.series.push(lineSeries("best so far", PALETTE[3], { width: 2 }));
    sp.scales = Object.assign({ y: { distr: 3, log: 2 } }, xs);
    sp.axes = [stepAxis, { label: "speedup ×" }];
    var pos = function (arr) { return arr.map(function (v) { return v > 0 ? v : null; }); };
    chart(view.querySelector('[data-chart="speedup"]'), sp, [x, pos(q(st, "speedup", "p10")), pos(q(st, "speedup", "p90")),
      pos(q(st, "speedup", "p25")), pos(q(st, "speedup", "p75")), pos(q(st, "speedup", "p50")),
      pos(st.map(function (s) { return s.best_so_far; }))]);
  }

  /* ---- Tasks ---- */

  /* The reference time kevald measured for a task's first shape set (the library's default), newest GPU first. */
  function refFirstShape(info, refs) {
    var first = info && info.shapes && info.shapes.length ? info.shapes[0].name : null;
    var rows = (refs || []).filter(function (x) { return first === null || x.shape === first; });
    rows.sort(function (a, b) { return (b.last_at || 0) - (a.last_at || 0); });
    return rows.length ? rows[0] : null;
  }
  function published(info, key) {
    var p = info && info.provenance;
    return p && typeof p[key] === "number" ? p[key] : null;
  }

  function viewTasks(r) {
    var p = r.params, q = p.get("q") || "", offset = parseInt(p.get("offset") || "0", 10) || 0, limit = 50;
    if (p.get("source") === "history") return viewTasksHistory(q, offset, limit);
    var level = p.get("level") || "", cat = p.get("category") || "";
    return api("/v1/dashboard/tasks", { q: q, level: level, category: cat, limit: limit, offset: offset }).then(function (d) {
      var fq = h("input", { name: "q", placeholder: "name or title contains…", value: q });
      var fl = h("select", { name: "level", "aria-label": "level" }, [["", "any level"], ["1", "level 1"], ["2", "level 2"],
        ["3", "level 3"]].map(function (o) {
          var e = h("option", { value: o[0], text: o[1] });
          if (o[0] === level) e.selected = true;
          return e;
        }));
      var fc = h("input", { name: "category", size: 14, placeholder: "category", value: cat });
      var form = h("form", { cls: "filters" }, h("label", { text: "filter" }), fq, fl, fc, h("button", { type: "submit", text: "Apply" }),
        link("#/tasks?source=history", "tasks with submissions, busiest first ›", { cls: "aside" }));
      form.addEventListener("submit", function (ev) {
        ev.preventDefault();
        location.hash = hashWith("#/tasks", { q: fq.value.trim(), level: fl.value, category: fc.value.trim() });
      });
      var el = h("div", null, h("h1", { text: "Tasks" }),
        h("p", { cls: "sub" }, "The task library: ", fig("tasks.total", fmtInt(d.total)), " tasks in name order. " +
          "PyTorch H100 times are the ones KernelBench publishes for its own sizes (eager); the reference time " +
          "is the median kevald measured for the task's reference on its first shape set, when it has timed one."),
        form,
        h("section", { cls: "card" }, d.items.length ? table(["task", "title", { text: "level", cls: "num" }, "category",
          { text: "shapes", cls: "num" }, { text: "PyTorch H100", cls: "num" }, { text: "reference (kevald)", cls: "num" },
          { text: "submissions", cls: "num" }, { text: "pass rate", cls: "num" }], d.items.map(function (t) {
            var st = t.stats || {}, ref = refFirstShape(t, t.reference_times);
            return h("tr", { "data-task": t.name }, td(taskLink(t.name)), td(t.title || "–", "title"),
              td(fmtInt(t.level), "num"), td(t.category || "–"), td(fmtInt((t.shapes || []).length), "num", "task.shapes"),
              td(fmtMs(published(t, "h100_torch_eager_ms")), "num", "task.torch_ms"),
              td(ref ? h("span", { title: (ref.gpu_name || "unknown GPU") + ", " + ref.n + " timing(s)", text: fmtMs(ref.median_ms_mean) }) : "–",
                "num", "task.reference_ms"),
              td(fmtInt(st.submissions || 0), "num", "task.submissions"), td(fmtPct(t.stats ? st.correct_rate : null), "num", "task.correct_rate"));
          })) : empty("No task matches."),
          pager("#/tasks", { q: q, level: level, category: cat }, offset, limit, d.next_offset, d.items.length)));
      return { el: el };
    });
  }

  function viewTasksHistory(q, offset, limit) {
    return api("/v1/dashboard/tasks", { source: "history", q: q, limit: limit, offset: offset }).then(function (d) {
      var el = h("div", null, h("h1", { text: "Tasks with submissions" }),
        h("p", { cls: "sub" }, "Busiest first, inline tasks included. ", link("#/tasks", "‹ the whole library")),
        searchForm("#/tasks", q, "task name contains…", { source: "history" }),
        h("section", { cls: "card" }, d.items.length ? table(["task", { text: "submissions", cls: "num" },
          { text: "done", cls: "num" }, { text: "correct", cls: "num" }, { text: "compile errors", cls: "num" },
          { text: "pass rate", cls: "num" }], d.items.map(function (t) {
            return h("tr", { "data-task": t.task }, td(taskLink(t.task)), td(fmtInt(t.submissions), "num", "task.submissions"),
              td(fmtInt(t.done), "num"), td(fmtInt(t.correct), "num", "task.correct"), td(fmtInt(t.compile_errors), "num"),
              td(fmtPct(t.correct_rate), "num", "task.correct_rate"));
          })) : empty("No submission yet."),
          pager("#/tasks", { source: "history", q: q }, offset, limit, d.next_offset, d.items.length)));
      return { el: el };
    });
  }

  /* Shape sets with their parameters and, per GPU, the reference median kevald measured. */
  function shapesTable(info, refs) {
    var shapes = (info && info.shapes) || [];
    var byShape = {};
    (refs || []).forEach(function (x) { (byShape[x.shape] = byShape[x.shape] || []).push(x); });
    var names = shapes.map(function (sh) { return sh.name; });
    Object.keys(byShape).forEach(function (n) { if (names.indexOf(n) < 0) names.push(n); });
    if (!names.length) return empty("No shape set.");
    var rows = [];
    names.forEach(function (n) {
      var sh = shapes.filter(function (x) { return x.name === n; })[0] || null;
      var params = sh ? Object.keys(sh).filter(function (k) { return k !== "name"; }).map(function (k) { return k + "=" + sh[k]; }).join(" ") : "–";
      var rs = byShape[n] || [null];
      rs.forEach(function (x, i) {
        rows.push(h("tr", { "data-shape": n, "data-gpu": x ? (x.gpu_name || "") : null }, td(i ? "" : n), td(i ? "" : params, "mono params"),
          td(x ? fmtMs(x.median_ms_mean) : "not timed yet", "num", "ref.mean_ms"), td(x ? fmtMs(x.median_ms_min) : "–", "num", "ref.min_ms"),
          td(x ? fmtInt(x.n) : "–", "num", "ref.n"), td(x ? (x.gpu_name || "unknown GPU") : "–"), td(x ? fmtTime(x.last_at) : "–")));
      });
    });
    return table(["shape set", "parameters", { text: "reference median", cls: "num" }, { text: "fastest", cls: "num" },
      { text: "timings", cls: "num" }, "GPU", "last timed"], rows);
  }

  function viewTask(r) {
    var name = r.parts[1], offset = parseInt(r.params.get("offset") || "0", 10) || 0, limit = 20, y = yardOf(r.params);
    var base = "#/task/" + encodeURIComponent(name), yParams = { y: y === "reference" ? "" : y };
    return api("/v1/dashboard/tasks/" + encodeURIComponent(name), { limit: limit, offset: offset }).then(function (d) {
      var s = d.summary, info = d.info;
      var eager = published(info, "h100_torch_eager_ms"), compiled = published(info, "h100_torch_compile_ms");
      var prov = info && info.provenance;
      var el = h("div", null,
        h("h1", null, "Task ", fig("task.name", d.task)),
        h("p", { cls: "sub", text: info ? ((info.title || "") + " · level " + info.level + " · " + (info.category || "") +
          " · " + (info.dtypes || []).join(", ")) : "inline task (not in the library)" }),
        info && info.description ? h("p", { cls: "description", "data-fig": "task.description", text: info.description }) : null,
        h("div", { cls: "tiles" },
          tile("Submissions", "task.submissions", fmtInt(s.submissions)),
          tile("Done", "task.done", fmtInt(s.done)),
          tile("Correct", "task.correct", fmtInt(s.correct)),
          tile("Pass rate", "task.correct_rate", fmtPct(s.correct_rate)),
          tile("Compile errors", "task.compile_errors", fmtInt(s.compile_errors)),
          tile("Median speedup", "task.median_speedup", fmtX(d.median_speedup), "of correct kernels")),
        card("Shape sets and reference times (measured by kevald)", shapesTable(info, d.reference_times)),
        h("div", { cls: "grid" },
          card("Published baseline", eager !== null || compiled !== null ? h("div", null, h("dl", { cls: "kv" },
            h("dt", { text: "PyTorch eager, H100" }), h("dd", { "data-fig": "task.torch_eager_ms", text: fmtMs(eager) }),
            h("dt", { text: "torch.compile, H100" }), h("dd", { "data-fig": "task.torch_compile_ms", text: fmtMs(compiled) }),
            h("dt", { text: "source" }), h("dd", { text: (prov.source || "") + (prov.problem ? " " + prov.problem : "") }),
            prov.reference_note ? [h("dt", { text: "reference" }), h("dd", { text: prov.reference_note })] : null),
            h("p", { cls: "legend-note", text: "The times KernelBench publishes (PyTorch 2.5, CUDA 12.4, mean of 100 " +
              "trials) for its own problem sizes; kevald's speedups are against the task's reference, timed as above." }))
            : empty(info ? "This task carries no published time." : "An inline task: nothing published.")),
          card("Verdicts", verdictBars(d.verdicts.reduce(function (o, v) { o[v.verdict] = v.n; return o; }, {})))),
        card("Speedup distribution of correct kernels", d.speedup_hist.length ? chartBox("hist") : empty("No correct kernel yet.")),
        card("Leaderboard: fastest correct kernels", d.leaderboard.length ? h("div", null,
          yardPicker(base, Object.assign({ offset: offset || "" }, yParams), y), table([{ text: "rank", cls: "num" },
          "submission", { text: yardLabel(y), cls: "num" }, "run", { text: "step", cls: "num" }, { text: "turn", cls: "num" },
          "finished"], d.leaderboard.map(function (x, i) {
            return h("tr", { "data-id": String(x.id) }, td(String(offset + i + 1), "num"), td(subLink(x.id)),
              td(fmtX(yardSpeedup(x.speedup_vs, x.speedup, y)), "num", "leader.speedup"), td(x.run_id ? runLink(x.run_id) : "–"),
              td(stepText(x.step), "num"), td(x.turn === null ? "–" : String(x.turn), "num"), td(fmtTime(x.finished_at)));
          })), pager(base, yParams, offset, limit, d.next_offset, d.leaderboard.length)) : empty("No correct kernel yet.")));
      return { el: el, after: function () { taskChart(d); } };
    });
  }

  function taskChart(d) {
    var el = view.querySelector('[data-chart="hist"]');
    if (!el) return;
    var x = d.speedup_hist.map(function (b) { return b.bucket; });
    chart(el, {
      scales: { x: { time: false }, y: { range: function (u, mn, mx) { return [0, Math.max(1, mx)]; } } },
      series: [{ label: "speedup", value: function (u, v) { return v === null || v === undefined ? "–" : fmtX(Math.pow(2, v / 8)) + "–" + fmtX(Math.pow(2, (v + 1) / 8)); } },
        barSeries("correct kernels", PALETTE[2])],
      axes: [{ label: "speedup ×", values: function (u, vs) { return vs.map(function (v) { return Math.pow(2, v / 8).toFixed(2); }); } },
        { label: "kernels" }]
    }, [x, d.speedup_hist.map(function (b) { return b.n; })]);
  }

  /* ---- Submission ---- */

  function viewSubmission(r) {
    var id = r.parts[1];
    return api("/v1/dashboard/submissions/" + encodeURIComponent(id)).then(function (d) {
      var s = d.submission, res = s.result || {}, req = d.request || {}, comp = res.compile || {};
      var gpu = res.gpu || null;
      var log = comp.log || "";
      var marked = errorLines(log);
      var el = h("div", null,
        h("h1", null, "Submission #", fig("sub.id", String(s.id)), " ", h("span", { "data-fig": "sub.verdict" }, badge(s.verdict || s.state)),
          gpu && gpu.standin ? h("span", { cls: "badge standin", "data-fig": "sub.standin", text: "stand-in result: no GPU ran this" }) : null),
        h("p", { cls: "sub" }, "task ", taskLink(s.task), s.tags && s.tags.run_id ? [" · run ", runLink(s.tags.run_id)] : null,
          s.tags && s.tags.step !== undefined ? " · step " + s.tags.step : "", " · mode " + s.mode,
          " · created " + fmtTime(s.created_at), " · attempts " + s.attempts),
        res.feedback ? h("p", { cls: "feedback", "data-fig": "sub.feedback", text: res.feedback }) : null,
        h("div", { cls: "tiles" },
          tile("Verdict", "sub.verdict_text", s.verdict || s.state),
          tile("Speedup", "sub.speedup", fmtX(s.speedup)),
          tile("Compile", "sub.compile_ms", comp.compile_ms !== undefined ? fmtMs(comp.compile_ms) : "–",
            comp.cache_hit ? "cache hit" : comp.ok === false ? "failed" : ""),
          tile("GPU time", "sub.gpu_busy", res.gpu_busy_ms !== undefined ? fmtMs(res.gpu_busy_ms) : "–",
            gpu ? (gpu.name || "") : "not run on a GPU")),
        turnsCard(d.turns, s),
        h("div", { cls: "grid" },
          card("Source", sourceBlock(req.source || "", marked.sourceLines)),
          card("Compile log (" + marked.count + " error line" + (marked.count === 1 ? "" : "s") + ")",
            log ? logBlock(log) : empty(comp.ok ? "Clean: nothing logged." : "No compile log."))),
        correctnessCard(res),
        h("div", { cls: "grid" },
          card("Timing trials", res.timing && res.timing.shapes && res.timing.shapes.length ? h("div", null, chartBox("timing"), timingTable(res.timing)) : empty("Not timed.")),
          card("Resources", resourcesTable(res.resources || comp.kernels))),
        res.error ? card("Error", h("pre", { cls: "mono", "data-fig": "sub.error", text: JSON.stringify(res.error, null, 2) })) : null,
        card("Request", h("dl", { cls: "kv" }, h("dt", { text: "language" }),
          h("dd", { cls: "mono", "data-fig": "sub.language", text: (req.language || "cuda") + (req.frontend ? " (" + req.frontend + ")" : "") }),
          h("dt", { text: "options" }), h("dd", { cls: "mono", text: (Array.isArray(req.options) ? req.options.join(" ") : req.options === undefined ? "" : JSON.stringify(req.options)) || "–" }),
          h("dt", { text: "plan" }), h("dd", null, h("pre", { cls: "mono", text: Array.isArray(req.plan) ? req.plan.map(function (st) { return JSON.stringify(st); }).join("\n") : req.plan !== undefined ? JSON.stringify(req.plan) : "–" })),
          h("dt", { text: "tags" }), h("dd", { cls: "mono", text: JSON.stringify(s.tags) }),
          h("dt", { text: "seed" }), h("dd", { cls: "mono", text: res.seed || "–" }))));
      return { el: el, after: function () { timingChart(res.timing); } };
    });
  }

  /* Compile log lines that are errors, and the source lines they point at (kernel.cu(N): error ...). */
  function errorLines(log) {
    var out = { count: 0, sourceLines: {} };
    log.split("\n").forEach(function (line) {
      if (/\berror\b/.test(line) && !/^\d+ errors? detected/.test(line)) {
        out.count++;
        var m = /kernel\.cu\((\d+)\)/.exec(line) || /^\s*(?:kernel\.cu|\S+\.ptx):(\d+)/.exec(line);
        if (m) out.sourceLines[m[1]] = true;
      }
    });
    return out;
  }

  function logBlock(log) {
    return h("div", { cls: "log", "data-fig": "sub.log" }, log.replace(/\n$/, "").split("\n").map(function (line) {
      var err = /\berror\b/.test(line) && !/^\d+ errors? detected/.test(line);
      return h("div", { cls: err ? "err" : /\bwarning\b/.test(line) ? "warn" : null, "data-err": err ? "1" : null, text: line || " " });
    }));
  }

  function sourceBlock(src, marks) {
    if (!src) return empty("No source.");
    var lines = src.replace(/\n$/, "").split("\n");
    return h("div", { cls: "code", "data-fig": "sub.source" }, h("table", null, h("tbody", null, lines.map(function (l, i) {
      var n = String(i + 1);
      return h("tr", { cls: marks[n] ? "mark" : null, "data-line": n }, h("td", { cls: "ln", text: n }), h("td", { text: l || " " }));
    }))));
  }

  function turnsCard(turns, s) {
    var anc = (turns && turns.ancestors) || [], ch = (turns && turns.children) || [];
    if (!anc.length && !ch.length) return null;
    var chip = function (t, self) {
      return h("span", { cls: "turn" + (self ? " self" : ""), "data-turn": String(t.id) },
        self ? "#" + t.id : subLink(t.id), " ", badge(t.verdict || t.state), t.speedup ? " " + fmtX(t.speedup) : "",
        t.turn !== null && t.turn !== undefined ? " · turn " + t.turn : "");
    };
    return card("Turns (parent → this → children)", h("div", { cls: "turns" },
      anc.map(function (t) { return [chip(t, false), " → "]; }),
      chip({ id: s.id, verdict: s.verdict, state: s.state, speedup: s.speedup, turn: s.tags ? s.tags.turn : null }, true),
      ch.length ? " → " : null, ch.map(function (t, i) { return [i ? ", " : "", chip(t, false)]; })));
  }

  function correctnessCard(res) {
    var c = res.correctness;
    if (!c || !c.shapes || !c.shapes.length) return null;
    var yn = function (v) { return v === true ? "yes" : v === false ? "NO" : "–"; };
    var mism = [];
    var rows = c.shapes.map(function (sh) {
      (sh.buffers || []).forEach(function (b) {
        (b.first_mismatches || []).forEach(function (m) { mism.push([sh.shape, b.name, m]); });
      });
      return h("tr", { "data-shape": sh.shape }, td(sh.shape), td(yn(sh.passed)), td(fmtInt(sh.trials), "num"),
        td(yn(sh.guard_ok)), td(yn(sh.inputs_intact)), td(yn(sh.deterministic)), td(yn(sh.revalidated)),
        td((sh.buffers || []).map(function (b) {
          return h("div", null, b.name + ": max abs " + fmtNum(b.max_abs, 6) + ", max rel " + fmtNum(b.max_rel, 6) +
            ", " + fmtInt(b.mismatches) + " of " + fmtInt(b.count) + " outside tolerance");
        })));
    });
    return card("Correctness", h("div", null, table(["shape", "passed", { text: "trials", cls: "num" }, "guards", "inputs intact",
      "deterministic", "revalidated", "buffers"], rows),
      mism.length ? h("div", null, h("h2", { text: "First mismatches" }), table(["shape", "buffer", { text: "index", cls: "num" },
        { text: "got", cls: "num" }, { text: "expected", cls: "num" }], mism.map(function (m) {
          return h("tr", { "data-mismatch": m[2].index }, td(m[0]), td(m[1]), td(fmtInt(m[2].index), "num"),
            td(String(m[2].got), "num", "mismatch.got"), td(String(m[2].want), "num", "mismatch.want"));
        }))) : null));
  }

  function timingTable(t) {
    var rows = [];
    t.shapes.forEach(function (sh) {
      ["candidate", "reference"].forEach(function (side) {
        var x = sh[side] || {};
        rows.push(h("tr", { "data-shape": sh.shape, "data-side": side }, td(sh.shape), td(side),
          td(fmtMs(x.median_ms), "num", "timing.median"), td(fmtMs(x.mean_ms), "num"), td(fmtMs(x.stdev_ms), "num"),
          td(fmtMs(x.min_ms), "num"), td(fmtMs(x.max_ms), "num"), td(fmtInt(x.trials), "num", "timing.trials"),
          td(side === "candidate" ? fmtX(sh.speedup) : "", "num")));
      });
    });
    return table(["shape", "side", { text: "median", cls: "num" }, { text: "mean", cls: "num" }, { text: "stdev", cls: "num" },
      { text: "min", cls: "num" }, { text: "max", cls: "num" }, { text: "trials", cls: "num" }, { text: "speedup", cls: "num" }], rows);
  }

  /* Per shape set: candidate and reference medians as bars, each with its fastest and slowest trial. */
  function timingChart(t) {
    var el = view.querySelector('[data-chart="timing"]');
    if (!el || !t || !t.shapes) return;
    var sh = t.shapes, x = [], cand = [], ref = [], mins = [], maxs = [];
    sh.forEach(function (s, i) {
      var c = s.candidate || {}, r = s.reference || {};
      x.push(i - 0.2, i + 0.2);
      cand.push(c.median_ms === undefined ? null : c.median_ms, null);
      ref.push(null, r.median_ms === undefined ? null : r.median_ms);
      mins.push(c.min_ms === undefined ? null : c.min_ms, r.min_ms === undefined ? null : r.min_ms);
      maxs.push(c.max_ms === undefined ? null : c.max_ms, r.max_ms === undefined ? null : r.max_ms);
    });
    var dots = function (label, fill) {
      return { label: label, stroke: "#1d2430", paths: function () { return null; },
        points: { show: true, size: 6, fill: fill }, value: function (u, v) { return fmtMs(v); } };
    };
    chart(el, {
      scales: { x: { time: false, range: [-0.6, sh.length - 0.4] }, y: { range: function (u, mn, mx) { return [0, mx * 1.1]; } } },
      series: [{ label: "shape", value: function (u, v) { var i = Math.round(v); return sh[i] ? sh[i].shape : "–"; } },
        barSeries("candidate median", PALETTE[0], { paths: uPlot.paths.bars({ size: [0.9, 90] }), value: function (u, v) { return fmtMs(v); } }),
        barSeries("reference median", PALETTE[1], { paths: uPlot.paths.bars({ size: [0.9, 90] }), value: function (u, v) { return fmtMs(v); } }),
        dots("fastest trial", "#fff"), dots("slowest trial", "#1d2430")],
      axes: [{ incrs: [1], values: function (u, vs) { return vs.map(function (v) { return Number.isInteger(v) && sh[v] ? sh[v].shape : ""; }); } },
        { label: "ms" }]
    }, [x, cand, ref, mins, maxs]);
  }

  function resourcesTable(list) {
    if (!list || !list.length) return empty("No kernel.");
    return table(["kernel", { text: "registers", cls: "num" }, { text: "shared (B)", cls: "num" }, { text: "local (B)", cls: "num" },
      { text: "spills (B)", cls: "num" }, { text: "block", cls: "num" }, { text: "occupancy", cls: "num" }], list.map(function (k) {
        var occ = k.occupancy ? fmtPct(k.occupancy.fraction) : "–";
        return h("tr", { "data-kernel": k.kernel || k.name }, td(h("code", { text: k.kernel || k.name })),
          td(fmtInt(k.registers), "num", "res.registers"), td(fmtInt((k.shared_static || 0) + (k.shared_dynamic || 0)), "num"),
          td(fmtInt(k.local), "num"), td(fmtInt((k.spill_stores || 0) + (k.spill_loads || 0)), "num"),
          td(k.block === undefined ? "–" : fmtInt(k.block), "num"), td(occ, "num"));
      }));
  }

  route();
})();
