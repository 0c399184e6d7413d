// SPDX-License-Identifier: BSD-3-Clause
// The Spur dashboard (docs/DASHBOARD.md): a single-page app over GET /dash/api/... that refreshes
// every 2 seconds. Every name, unique, client id and error text is inserted as text (textContent,
// attributes set through the DOM): never as markup. Actions are POST /admin with the
// X-Spur-Admin header (which a cross-site form cannot send), confirmed first.
"use strict";

const REFRESH_MS = 2000;
const PAGE = 50;

// ---------------------------------------------------------------- DOM helpers

// el builds an element: attrs are set as properties or attributes (never innerHTML), children
// are nodes or strings (text nodes).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
}

function fmtNum(n) {
  if (n === null || n === undefined) return "–";
  return Number(n).toLocaleString("en-US", {maximumFractionDigits: 1});
}

function fmtSecs(s) {
  if (s === null || s === undefined || s < 0) return "–";
  if (s < 0.001) return (s * 1e6).toFixed(0) + " µs";
  if (s < 1) return (s * 1000).toFixed(s < 0.01 ? 1 : 0) + " ms";
  if (s < 120) return s.toFixed(1) + " s";
  if (s < 7200) return (s / 60).toFixed(1) + " min";
  if (s < 172800) return (s / 3600).toFixed(1) + " h";
  return (s / 86400).toFixed(1) + " d";
}

function fmtBytes(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}

function fmtTime(t) {
  if (t === null || t === undefined || t < 0) return "–";
  return new Date(t * 1000).toISOString().replace(".000", "");
}

// ---------------------------------------------------------------- server access

const state = {admin: false, view: null, timer: null, lost: false, busy: false};

// getJSON fetches a document; a server that does not answer within 5 s counts as lost.
async function getJSON(path) {
  const ctl = new AbortController();
  const t = setTimeout(() => ctl.abort(), 5000);
  let r;
  try {
    r = await fetch(path, {cache: "no-store", credentials: "same-origin", signal: ctl.signal});
  } catch (e) {
    throw new Error(e.name === "AbortError" ? "no answer" : "no connection");
  } finally {
    clearTimeout(t);
  }
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  state.admin = r.headers.get("X-Spur-Dashboard-Admin") === "1";
  return r.json();
}

// escName writes a name for an admin command line as the listings print it (docs/ADMIN.md,
// "Names in listings"): control bytes, spaces and a '%' that starts an escape become %XX.
function escName(s) {
  let out = "";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || c === 0x20 ||
        (c === 0x25 && /^[0-9a-fA-F]{2}/.test(s.slice(i + 1, i + 3))))
      out += "%" + c.toString(16).toUpperCase().padStart(2, "0");
    else out += s[i];
  }
  return out;
}

// admin sends one admin command line after the operator confirms what; returns its reply text,
// or null when not confirmed.
async function admin(line, what) {
  if (!window.confirm(what + "?")) return null;
  const r = await fetch("/admin", {
    method: "POST", credentials: "same-origin", cache: "no-store",
    headers: {"X-Spur-Admin": "1", "Content-Type": "text/plain"}, body: line,
  });
  const text = await r.text();
  notice(r.ok ? what + ": " + text.trim() : "Refused (HTTP " + r.status + "): " + text.trim());
  refreshSoon();
  return r.ok ? text : null;
}

function notice(text) {
  const n = document.getElementById("notice");
  n.textContent = text;
  clearTimeout(notice.t);
  notice.t = setTimeout(() => { n.textContent = ""; }, 8000);
}

function setConn(ok, why) {
  const c = document.getElementById("conn");
  state.lost = !ok;
  c.className = "conn " + (ok ? "live" : "lost");
  c.textContent = ok ? "Live · updated " + new Date().toLocaleTimeString("en-GB")
                     : "Connection lost — retrying (" + why + ")";
}

// ---------------------------------------------------------------- tables

// table builds a table: cols are {key, label, sort?, text?}; returns {table, body}.
function table(caption, cols, sortState, onSort) {
  const tr = el("tr");
  for (const c of cols) {
    const th = el("th", {scope: "col", class: c.text ? "text" : null});
    if (c.sort && onSort) {
      if (sortState.key === c.sort)
        th.setAttribute("aria-sort", sortState.desc ? "descending" : "ascending");
      th.append(el("button", {type: "button", onclick: () => onSort(c.sort),
                              "aria-label": "Sort by " + c.label}, c.label));
    } else th.textContent = c.label;
    tr.append(th);
  }
  const body = el("tbody");
  const t = el("table", {}, el("caption", {text: caption}), el("thead", {}, tr), body);
  return {table: el("div", {class: "scroll"}, t), body, caption: t.caption};
}

function cell(v, text) {
  return el("td", {class: text ? "text" : null}, v instanceof Node ? v : String(v));
}

function funcLink(name) {
  return el("a", {href: "#function/" + encodeURIComponent(name), title: name}, name);
}

function pager(total, offset, limit, go) {
  const last = Math.max(0, Math.ceil(total / limit) - 1), page = Math.floor(offset / limit);
  return el("div", {class: "tools", role: "group", "aria-label": "Pages"},
    el("button", {type: "button", class: "act", disabled: page <= 0,
                  onclick: () => go(Math.max(0, offset - limit))}, "Previous"),
    el("span", {"aria-live": "polite"}, "Page " + (page + 1) + " of " + (last + 1) +
       " (" + fmtNum(total) + ")"),
    el("button", {type: "button", class: "act", disabled: page >= last,
                  onclick: () => go(offset + limit)}, "Next"));
}

// ---------------------------------------------------------------- overview

const overview = {
  sort: {key: "name", desc: false}, q: "", offset: 0, prev: new Map(), rates: new Map(),

  render(main) {
    main.append(el("h2", {text: "Overview"}));
    this.summary = el("dl", {class: "summary", "aria-label": "Server"});
    const input = el("input", {id: "filter", type: "search", value: this.q,
                               placeholder: "part of a name", autocomplete: "off"});
    input.addEventListener("input", () => { this.q = input.value; this.offset = 0; refreshSoon(); });
    this.pagerBox = el("div");
    main.append(this.summary, el("h3", {text: "Functions"}),
                el("div", {class: "tools"}, el("label", {for: "filter"}, "Filter by name"), input),
                this.tableBox = el("div"), this.pagerBox);
  },

  async refresh() {
    const s = this.sort;
    const d = await getJSON("/dash/api/overview?offset=" + this.offset + "&limit=" + PAGE +
                            "&sort=" + s.key + "&desc=" + (s.desc ? 1 : 0) +
                            "&q=" + encodeURIComponent(this.q));
    state.admin = d.page.admin;
    this.drawSummary(d.server);
    this.drawTable(d);
  },

  drawSummary(v) {
    const st = v.store;
    const store = !st.enabled ? "none (memory only)"
      : st.replaying ? "replaying" : st.failed_commits ? "failing (" + st.failed_commits + ")"
      : "ok, " + st.held_replies + " replies held";
    const items = [["Version", v.version], ["Uptime", fmtSecs(v.uptime)],
      ["Connections", fmtNum(v.connections)], ["Workers", fmtNum(v.workers)],
      ["Functions", fmtNum(v.functions)], ["Queued", fmtNum(v.queued)],
      ["Running", fmtNum(v.running)], ["Dead letters", fmtNum(v.failed_jobs)],
      ["Waiting", fmtNum(v.waiting_jobs)], ["Schedules", fmtNum(v.schedules)],
      ["Memory (jobs + buffers)", fmtBytes(v.memory_bytes)], ["Store", store],
      ["Store lag", st.enabled ? fmtNum(st.batch) + " ops queued" + (st.committing ? ", committing" : "") : "–"]];
    clear(this.summary);
    for (const [k, x] of items)
      this.summary.append(el("div", {}, el("dt", {text: k}), el("dd", {text: x})));
  },

  rate(name, now, sub, comp) {
    const p = this.prev.get(name);
    this.prev.set(name, {t: now, sub, comp});
    if (p && now > p.t)
      this.rates.set(name, [(sub - p.sub) / (now - p.t), (comp - p.comp) / (now - p.t)]);
    return this.rates.get(name) || [null, null];
  },

  drawTable(d) {
    const cols = [
      {label: "Function", sort: "name", text: true}, {label: "High"}, {label: "Normal"},
      {label: "Low"}, {label: "Queued", sort: "queued"}, {label: "Running", sort: "running"},
      {label: "Workers", sort: "workers"}, {label: "In/s", sort: "in"},
      {label: "Out/s", sort: "out"}, {label: "Wait p50", sort: "p50"},
      {label: "Wait p99", sort: "p99"}, {label: "Marks", text: true}];
    const t = table("Functions " + (d.page.offset + 1) + "–" +
                    (d.page.offset + d.functions.length) + " of " + d.page.total, cols,
                    this.sort, (k) => {
                      this.sort = {key: k, desc: this.sort.key === k ? !this.sort.desc : k !== "name"};
                      refreshSoon();
                    });
    for (const f of d.functions) {
      const [rin, rout] = this.rate(f.name, d.server.time, f.submitted, f.completed);
      const marks = el("span");
      for (const m of f.marks) marks.append(el("span", {class: "mark", text: m}));
      t.body.append(el("tr", {"data-function": f.name}, el("th", {scope: "row", class: "text"},
        funcLink(f.name)), cell(fmtNum(f.queued.high)), cell(fmtNum(f.queued.normal)),
        cell(fmtNum(f.queued.low)), el("td", {class: "queued"}, fmtNum(f.queued.total)),
        el("td", {class: "running"}, fmtNum(f.running)), el("td", {class: "workers"}, fmtNum(f.workers)),
        cell(fmtNum(rin)), cell(fmtNum(rout)), cell(fmtSecs(f.wait_p50)), cell(fmtSecs(f.wait_p99)),
        cell(marks, true)));
    }
    if (!d.functions.length)
      t.body.append(el("tr", {}, el("td", {colspan: cols.length, class: "text muted"},
                                    "No function" + (this.q ? " matches the filter" : " yet"))));
    clear(this.tableBox);
    this.tableBox.append(t.table);
    clear(this.pagerBox);
    this.pagerBox.append(pager(d.page.total, d.page.offset, PAGE,
                               (o) => { this.offset = o; refreshSoon(); }));
  },
};

// ---------------------------------------------------------------- charts

const charts = {
  render(main) {
    main.append(el("h2", {text: "Charts"}),
                el("p", {class: "muted", text: "Up to the last 15 minutes, one sample a second, kept by the server."}));
    this.box = el("div", {class: "charts"});
    main.append(this.box);
  },

  async refresh() {
    const d = await getJSON("/dash/api/series");
    const s = d.samples;
    const t = s.map((x) => x[0]);
    clear(this.box);
    this.box.append(
      chart("Jobs per second", t, [["submitted", s.map((x) => x[1])], ["completed", s.map((x) => x[2])]], fmtNum),
      chart("Queue depth", t, [["queued", s.map((x) => x[3])], ["running", s.map((x) => x[4])]], fmtNum),
      chart("Queue wait p99", t, [["p99 of jobs assigned", s.map((x) => x[5])]], fmtSecs));
  },
};

// chart draws series (name, values; null: no value) against times t as an SVG line chart.
function chart(title, t, series, fmt) {
  const W = 600, H = 200, L = 64, B = 20;
  let max = 0;
  for (const [, v] of series) for (const x of v) if (x !== null && x > max) max = x;
  if (max <= 0) max = 1;
  // the time axis spans the history kept (15 minutes once the server has run that long)
  const t1 = t.length ? t[t.length - 1] : 0;
  const span = Math.min(900, Math.max(60, t.length ? t1 - t[0] : 0)), t0 = t1 - span;
  const X = (x) => L + (x - t0) / span * (W - L - 4), Y = (y) => 4 + (1 - y / max) * (H - B - 8);
  const g = svg("svg", {viewBox: "0 0 " + W + " " + H, class: "chart", role: "img"});
  const ti = svg("title");
  ti.textContent = title + ": latest " + series.map(([n, v]) => n + " " + fmt(v.length ? v[v.length - 1] : null)).join(", ");
  g.append(ti);
  g.append(svg("line", {x1: L, y1: H - B, x2: W, y2: H - B, class: "axis"}));
  g.append(svg("line", {x1: L, y1: 4, x2: L, y2: H - B, class: "axis"}));
  const lab = (x, y, s, anchor) => {
    const e = svg("text", {x, y, "text-anchor": anchor});
    e.textContent = s;
    g.append(e);
  };
  lab(L - 4, 12, fmt(max), "end");
  lab(L - 4, H - B, "0", "end");
  lab(L, H - 4, "−" + (span >= 120 ? Math.round(span / 60) + " min" : Math.round(span) + " s"), "start");
  lab(W - 2, H - 4, "now", "end");
  series.forEach(([, v], k) => {
    let d = "", pen = false;
    v.forEach((y, i) => {
      if (i > 0 && t[i] - t[i - 1] > 3) pen = false; // no samples meanwhile (a stopped server)
      if (y === null) { pen = false; return; }
      d += (pen ? "L" : "M") + X(t[i]).toFixed(1) + " " + Y(y).toFixed(1);
      pen = true;
    });
    if (d) g.append(svg("path", {d, class: "s" + k}));
  });
  const legend = el("div", {class: "legend"});
  series.forEach(([n, v], k) => legend.append(el("span", {class: "k" + k},
    "■ " + n + ": " + fmt(v.length ? v[v.length - 1] : null))));
  return el("figure", {}, el("figcaption", {text: title}), g, legend);
}

// ---------------------------------------------------------------- one function

const func = {
  render(main, arg) {
    this.name = arg;
    main.append(el("h2", {}, "Function ", el("q", {text: arg})));
    main.append(this.box = el("div"));
  },

  async refresh() {
    const d = await getJSON("/dash/api/function?name=" + encodeURIComponent(this.name));
    clear(this.box);
    if (!d.found) {
      this.box.append(el("p", {text: "There is no function of that name (now)."}));
      return;
    }
    const f = d.function, r = d.retry, mq = d.max_queue;
    const lim = (n) => n ? fmtNum(n) : "none";
    this.box.append(el("dl", {class: "kv"},
      el("dt", {text: "Queued (high / normal / low)"}),
      el("dd", {text: f.queued.high + " / " + f.queued.normal + " / " + f.queued.low}),
      el("dt", {text: "Running"}), el("dd", {text: fmtNum(f.running)}),
      el("dt", {text: "Wait p50 / p99"}), el("dd", {text: fmtSecs(f.wait_p50) + " / " + fmtSecs(f.wait_p99)}),
      el("dt", {text: "maxqueue (high / normal / low)"}),
      el("dd", {text: lim(mq.high) + " / " + lim(mq.normal) + " / " + lim(mq.low)}),
      el("dt", {text: "Retry policy"}),
      el("dd", {text: r ? r.count + " retries, backoff " + fmtSecs(r.backoff) + " up to " + fmtSecs(r.max) : "none"}),
      el("dt", {text: "Limits (flow control)"}),
      el("dd", {text: f.marks.length ? f.marks.join(", ") : "none"})));
    const w = table("Workers (" + d.workers.length + ")",
                    [{label: "Client id", text: true}, {label: "Address", text: true},
                     {label: "Running here", text: true}, {label: "Running"}, {label: "State", text: true}]);
    for (const x of d.workers)
      w.body.append(el("tr", {}, cell(x.client_id === null ? "–" : x.client_id, true),
        cell(x.address, true), cell(x.running.join(" "), true), cell(fmtNum(x.running_total)),
        cell(x.sleeping ? "sleeping" : "awake", true)));
    const q = table("Queue head (the next " + d.queue_head.length + " jobs)",
                    [{label: "Handle", text: true}, {label: "Unique", text: true},
                     {label: "Priority", text: true}, {label: "Age"}]);
    for (const j of d.queue_head)
      q.body.append(el("tr", {}, cell(jobLink(j.handle), true), cell(j.unique, true),
                       cell(j.priority, true), cell(fmtSecs(j.age))));
    this.box.append(el("h3", {text: "Workers"}), w.table, el("h3", {text: "Queue head"}), q.table);
  },
};

function jobLink(h) {
  return el("a", {href: "#job/" + encodeURIComponent(h)}, h);
}

// ---------------------------------------------------------------- dead letters

const failed = {
  offset: 0,
  render(main) {
    main.append(el("h2", {text: "Dead letters"}),
      el("p", {class: "muted", text: "Jobs whose retries are used up. Retry puts a job back in its queue with its attempts reset."}));
    this.tools = el("div", {class: "tools"});
    main.append(this.tools, this.box = el("div"), this.pagerBox = el("div"));
  },

  async refresh() {
    const d = await getJSON("/dash/api/failed?offset=" + this.offset + "&limit=" + PAGE);
    clear(this.tools);
    const funcs = [...new Set(d.jobs.map((j) => j.function))];
    this.tools.append(
      actionButton("Retry all listed", d.jobs.length === 0, () =>
        runAll(funcs.map((f) => "retry job all " + escName(f)), "Retry every dead-letter job of " + funcs.length + " function(s)")),
      actionButton("Purge all", d.total === 0, () => admin("purge failed", "Purge (delete) all " + d.total + " dead-letter jobs"), true));
    const t = table("Dead-letter jobs " + (d.total ? (d.offset + 1) + "–" + (d.offset + d.jobs.length) : "0") + " of " + d.total,
      [{label: "Handle", text: true}, {label: "Function", text: true}, {label: "Unique", text: true},
       {label: "Attempts"}, {label: "Last failure", text: true}, {label: "Last error", text: true},
       {label: "Action", text: true}]);
    for (const j of d.jobs)
      t.body.append(el("tr", {"data-handle": j.handle}, cell(jobLink(j.handle), true),
        cell(funcLink(j.function), true), cell(j.unique, true), cell(fmtNum(j.attempts)),
        cell(fmtTime(j.last_failed), true), cell(j.error, true),
        cell(actionButton("Retry", false, () => admin("retry job " + j.handle, "Retry job " + j.handle)), true)));
    if (!d.jobs.length)
      t.body.append(el("tr", {}, el("td", {colspan: 7, class: "text muted"}, "The dead-letter list is empty.")));
    clear(this.box);
    this.box.append(t.table);
    clear(this.pagerBox);
    this.pagerBox.append(pager(d.total, d.offset, PAGE, (o) => { this.offset = o; refreshSoon(); }));
  },
};

async function runAll(lines, what) {
  if (!window.confirm(what + "?")) return;
  for (const l of lines) {
    const r = await fetch("/admin", {method: "POST", credentials: "same-origin",
      headers: {"X-Spur-Admin": "1", "Content-Type": "text/plain"}, body: l});
    const text = await r.text();
    if (!r.ok) { notice("Refused (HTTP " + r.status + "): " + text.trim()); refreshSoon(); return; }
  }
  notice(what + ": done");
  refreshSoon();
}

// actionButton is a button for a state-changing action: disabled (with the reason in its
// title) when the server is read-only.
function actionButton(label, disabled, run, danger) {
  const ro = !state.admin;
  return el("button", {type: "button", class: "act" + (danger ? " danger" : ""),
                       disabled: disabled || ro,
                       title: ro ? "Read-only: start spurd with --http-admin to act from here" : null,
                       onclick: run}, label);
}

// ---------------------------------------------------------------- schedules

const schedules = {
  render(main) {
    main.append(el("h2", {text: "Schedules"}));
    const text = el("input", {id: "sched-text", type: "text", size: 60, autocomplete: "off",
                              placeholder: "nightly 0 3 * * * report --priority low {\"day\":1}"});
    this.form = el("form", {class: "tools", "aria-label": "Add a schedule"},
      el("label", {for: "sched-text"}, "Add (NAME SPEC FUNC [options] PAYLOAD)"), text,
      el("button", {type: "submit", class: "act"}, "Add"));
    this.form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      if (text.value.trim()) admin("schedule add " + text.value.trim(), "Add schedule " + text.value.trim().split(" ")[0]);
    });
    main.append(this.form, this.box = el("div"));
  },

  async refresh() {
    const d = await getJSON("/dash/api/schedules");
    for (const e of this.form.elements) e.disabled = !state.admin;
    const t = table(d.schedules.length + " schedule(s)",
      [{label: "Name", text: true}, {label: "Spec", text: true}, {label: "Function", text: true},
       {label: "Next", text: true}, {label: "Runs"}, {label: "Last", text: true},
       {label: "Unique", text: true}, {label: "Priority", text: true}, {label: "Action", text: true}]);
    for (const s of d.schedules)
      t.body.append(el("tr", {}, cell(s.name, true), cell(s.spec, true), cell(funcLink(s.function), true),
        cell(fmtTime(s.next), true), cell(fmtNum(s.runs)), cell(fmtTime(s.last), true),
        cell(s.unique, true), cell(s.priority, true),
        cell(actionButton("Remove", false, () => admin("schedule remove " + escName(s.name), "Remove schedule " + s.name), true), true)));
    clear(this.box);
    this.box.append(t.table);
  },
};

// ---------------------------------------------------------------- waiting jobs, job lookup

const waiting = {
  offset: 0,
  render(main) {
    main.append(el("h2", {text: "Waiting jobs"}),
                el("p", {class: "muted", text: "Jobs submitted with --after (X-Spur-After), waiting for others to complete."}));
    main.append(this.box = el("div"), this.pagerBox = el("div"));
  },
  async refresh() {
    const d = await getJSON("/dash/api/waiting?offset=" + this.offset + "&limit=" + PAGE);
    const t = table(d.total + " waiting job(s)", [{label: "Handle", text: true}, {label: "Function", text: true},
      {label: "Unique", text: true}, {label: "Priority", text: true}, {label: "Waits for", text: true}]);
    for (const j of d.jobs) {
      const w = el("span");
      j.waits_for.forEach((h, i) => { if (i) w.append(" "); w.append(jobLink(h)); });
      t.body.append(el("tr", {}, cell(jobLink(j.handle), true), cell(funcLink(j.function), true),
        cell(j.unique, true), cell(j.priority, true), cell(w, true)));
    }
    clear(this.box);
    this.box.append(t.table);
    clear(this.pagerBox);
    this.pagerBox.append(pager(d.total, d.offset, PAGE, (o) => { this.offset = o; refreshSoon(); }));
  },
};

const job = {
  render(main, arg) {
    main.append(el("h2", {text: "Job lookup"}));
    const input = el("input", {id: "job-key", type: "search", value: arg || "", autocomplete: "off"});
    const kind = el("select", {id: "job-kind"}, el("option", {value: "handle"}, "handle"),
                    el("option", {value: "unique"}, "unique"));
    const form = el("form", {class: "tools", role: "search"},
      el("label", {for: "job-key"}, "Find a job by"), kind, input,
      el("button", {type: "submit", class: "act"}, "Find"));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      this.key = input.value;
      this.kind = kind.value;
      refreshSoon();
    });
    this.key = arg || "";
    this.kind = "handle";
    main.append(form, this.box = el("div", {"aria-live": "polite"}));
  },
  async refresh() {
    clear(this.box);
    if (!this.key) return;
    const d = await getJSON("/dash/api/job?" + this.kind + "=" + encodeURIComponent(this.key));
    if (!d.found) {
      this.box.append(el("p", {text: "No live job has that " + this.kind + "."}));
      return;
    }
    const j = d.job, x = d.extra;
    const w = el("span");
    x.waits_for.forEach((h, i) => { if (i) w.append(" "); w.append(jobLink(h)); });
    const rows = [["Handle", j.handle], ["Function", funcLink(j.function)], ["Unique", j.unique],
      ["State", j.state], ["Priority", j.priority], ["Background", j.background ? "yes" : "no"],
      ["Age in this state", fmtSecs(x.age)], ["Attempts (failed runs)", fmtNum(x.attempts)],
      ["Requeued after a lost worker", fmtNum(j.retries)], ["Last error", x.last_error === null ? "–" : x.last_error],
      ["Waits for", x.waits_for.length ? w : "nothing"], ["Jobs waiting for it", fmtNum(x.dependents)],
      ["Clients waiting", fmtNum(j.clients)], ["Payload", fmtBytes(j.payload_bytes)]];
    const dl = el("dl", {class: "kv"});
    for (const [k, v] of rows) dl.append(el("dt", {text: k}), el("dd", {}, v));
    this.box.append(dl);
  },
};

// ---------------------------------------------------------------- routing and the refresh loop

const views = {overview, charts, function: func, failed, schedules, waiting, job};

function route() {
  const h = decodeURIComponent(location.hash.slice(1) || "overview");
  const slash = h.indexOf("/");
  const name = slash < 0 ? h : h.slice(0, slash), arg = slash < 0 ? "" : h.slice(slash + 1);
  const v = views[name] || overview;
  const main = document.getElementById("main");
  clear(main);
  state.view = v;
  v.render(main, arg);
  for (const a of document.querySelectorAll("nav a")) {
    if (a.dataset.view === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  document.title = "Spur · " + (name === "function" ? arg : name);
  refreshSoon();
}

async function refresh() {
  clearTimeout(state.timer);
  const v = state.view;
  try {
    await v.refresh();
    setConn(true);
  } catch (e) {
    setConn(false, e.message || String(e));
  }
  state.timer = setTimeout(refresh, REFRESH_MS);
}

function refreshSoon() {
  clearTimeout(state.timer);
  state.timer = setTimeout(refresh, 0);
}

window.addEventListener("hashchange", () => { route(); document.getElementById("main").focus(); });
route();
