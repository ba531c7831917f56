"use strict";
// The bigloop trace viewer: the run list (#/) and one run (#/run/ID), read from the JSON
// API of `bigloop ui`. Every text taken from a trace enters the page as a text node
// (`el` below), never as HTML, so a tool result holding markup shows as that markup.

const SVG = "http://www.w3.org/2000/svg";
const POLL_MS = 1000;
const LIST_POLL_MS = 2000;
let timer = null;
let view = 0; // bumped on every navigation: a poll started for an older view stops

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  setAttrs(node, attrs);
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  setAttrs(node, attrs);
  for (const child of children) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function setAttrs(node, attrs) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    node.setAttribute(key, String(value));
  }
}

function token(text) {
  // A class-name-safe word from a trace value (kind, status).
  return String(text).replace(/[^a-zA-Z0-9_-]/g, "_");
}

function json(value) {
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function oneLine(value, max) {
  const text = (typeof value === "string" ? value : JSON.stringify(value)) || "";
  const flat = text.replace(/\s+/g, " ");
  return flat.length > max ? flat.slice(0, max - 1) + "…" : flat;
}

function seconds(s) {
  if (s === null || s === undefined) return "—";
  if (s < 1) return (s * 1000).toFixed(s < 0.01 ? 1 : 0) + " ms";
  if (s < 120) return s.toFixed(s < 10 ? 2 : 1) + " s";
  return (s / 60).toFixed(1) + " min";
}

function when(epoch) {
  return epoch ? new Date(epoch * 1000).toLocaleString() : "—";
}

function cost(value) {
  return value === null || value === undefined ? "—" : Number(value).toFixed(4);
}

// A server started with --token: the URL it printed ends in #token=..., kept for the
// session and sent with every API request (the fragment never reaches the server).
const TOKEN = (() => {
  const found = new URLSearchParams(location.hash.slice(1)).get("token");
  if (found) sessionStorage.setItem("bigloop-token", found);
  return found || sessionStorage.getItem("bigloop-token");
})();

async function getJSON(url) {
  const headers = { accept: "application/json" };
  if (TOKEN) headers.authorization = "Bearer " + TOKEN;
  const response = await fetch(url, { headers });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || response.statusText);
  return data;
}

function stopPolling() {
  if (timer !== null) clearTimeout(timer);
  timer = null;
  document.getElementById("live").hidden = true;
}

function show(...nodes) {
  const main = document.getElementById("main");
  main.replaceChildren(...nodes);
}

function failure(error) {
  show(el("p", { class: "outcome err" }, "Could not load: " + error.message), el("a", { href: "#/" }, "All runs"));
}

// ----------------------------------------------------------------------- the run list

async function showRuns() {
  const table = el("table", { class: "runs", id: "runs" });
  const head = el("tr", {});
  for (const name of ["run", "task", "status", "model", "planner", "steps", "tokens", "cost", "time", "started"]) {
    head.append(el("th", {}, name));
  }
  table.append(el("thead", {}, head));
  const body = el("tbody", {});
  table.append(body);
  show(el("h2", {}, "Runs"), table);
  document.title = "bigloop traces";
  let last = "";
  const mine = view;
  const refresh = async () => {
    try {
      const data = await getJSON("/api/runs");
      if (mine !== view) return;
      const text = JSON.stringify(data.runs);
      if (text !== last) {
        last = text;
        body.replaceChildren(...data.runs.map(runRow));
        if (!data.runs.length) body.append(el("tr", {}, el("td", { colspan: 10, class: "muted" }, "No runs recorded yet.")));
      }
      document.getElementById("live").hidden = !data.runs.some((r) => r.status === "running");
    } catch (error) {
      failure(error);
      return;
    }
    timer = setTimeout(refresh, LIST_POLL_MS);
  };
  await refresh();
}

function runRow(run) {
  const link = el("a", { href: "#/run/" + encodeURIComponent(run.run_id), class: "mono" }, run.run_id);
  return el(
    "tr",
    { "data-run": run.run_id },
    el("td", {}, link),
    el("td", { class: "task" }, run.task),
    el("td", {}, el("span", { class: "badge status-" + token(run.status) }, run.status)),
    el("td", {}, run.model),
    el("td", {}, run.planner || "—"),
    el("td", { class: "num" }, run.steps),
    el("td", { class: "num", title: run.prompt_tokens + " prompt + " + run.completion_tokens + " completion" }, run.tokens),
    el("td", { class: "num" }, cost(run.cost)),
    el("td", { class: "num" }, seconds(run.seconds)),
    el("td", { class: "num" }, when(run.started_at)),
  );
}

// ----------------------------------------------------------------------- one run

async function showRun(runId) {
  const mine = view;
  let data;
  try {
    data = await getJSON("/api/runs/" + encodeURIComponent(runId));
  } catch (error) {
    if (mine === view) failure(error);
    return;
  }
  if (mine !== view) return;
  const header = el("div", { id: "run-header" });
  const planPanel = el("div", { id: "plan" });
  const timelinePanel = el("div", { id: "timeline" });
  const stepsBox = el("div", { id: "steps" });
  show(el("a", { href: "#/" }, "← All runs"), header, planPanel, el("h3", {}, "Timeline"), timelinePanel,
    el("h3", {}, "Steps"), stepsBox);
  const steps = data.steps;
  const render = (run, plan, added) => {
    renderHeader(header, run);
    renderPlan(planPanel, plan);
    renderTimeline(timelinePanel, steps, run);
    const fragment = document.createDocumentFragment();
    for (const step of added) fragment.append(stepNode(step, run.run_id));
    stepsBox.append(fragment);
    stepsBox.dataset.count = String(steps.length);
  };
  render(data.run, data.plan, steps);
  document.title = "run " + data.run.run_id + " · bigloop traces";
  afterPaint(() => {
    performance.mark("bigloop:steps-rendered");
    document.body.dataset.rendered = data.run.run_id;
  });
  const poll = async () => {
    try {
      const next = await getJSON("/api/runs/" + encodeURIComponent(runId) + "?since=" + steps.length);
      if (mine !== view) return;
      const fresh = next.steps.filter((s) => s.index >= steps.length);
      steps.push(...fresh);
      render(next.run, next.plan, fresh);
      if (next.run.status !== "running") {
        stopPolling();
        return;
      }
    } catch (error) {
      if (mine !== view) return; // else the server may be restarting: keep trying
    }
    timer = setTimeout(poll, POLL_MS);
  };
  if (data.run.status === "running") {
    document.getElementById("live").hidden = false;
    timer = setTimeout(poll, POLL_MS);
  }
}

function afterPaint(fn) {
  requestAnimationFrame(() => requestAnimationFrame(fn));
}

function renderHeader(box, run) {
  const meta = el(
    "div",
    { class: "meta-line" },
    el("span", {}, "run ", el("b", { class: "mono" }, run.run_id)),
    el("span", { class: "badge status-" + token(run.status), id: "run-status" }, run.status),
    el("span", {}, "model ", el("b", {}, run.model)),
    el("span", {}, "planner ", el("b", {}, run.planner || "—")),
    el("span", {}, "steps ", el("b", {}, run.steps)),
    el("span", {}, "tool calls ", el("b", {}, run.tool_calls)),
    el("span", {}, "tokens ", el("b", {}, run.prompt_tokens + " + " + run.completion_tokens)),
    el("span", {}, "cost ", el("b", {}, cost(run.cost))),
    el("span", {}, "time ", el("b", {}, seconds(run.seconds))),
    el("span", {}, "started ", el("b", {}, when(run.started_at))),
  );
  const parts = [el("h2", { id: "run-task" }, run.task), meta];
  if (run.answer !== null && run.answer !== undefined) {
    parts.push(el("div", { class: "outcome" }, el("b", {}, "Answer: "), run.answer));
  } else if (run.question) {
    parts.push(el("div", { class: "outcome" }, el("b", {}, "Question for the user: "), run.question));
  } else if (run.error) {
    parts.push(el("div", { class: "outcome err" }, el("b", {}, "Error: "), run.error));
  }
  box.replaceChildren(...parts);
}

// ----------------------------------------------------------------------- plan graph

function renderPlan(box, plan) {
  if (!plan) {
    box.replaceChildren();
    return;
  }
  const depth = new Map();
  const byId = new Map(plan.nodes.map((n) => [n.id, n]));
  const depthOf = (node) => {
    if (depth.has(node.id)) return depth.get(node.id);
    depth.set(node.id, 0);
    let d = 0;
    for (const dep of node.deps) if (byId.has(dep)) d = Math.max(d, depthOf(byId.get(dep)) + 1);
    depth.set(node.id, d);
    return d;
  };
  const columns = [];
  for (const node of plan.nodes) {
    const d = depthOf(node);
    (columns[d] = columns[d] || []).push(node);
  }
  const W = 190, H = 44, GX = 60, GY = 14;
  const pos = new Map();
  columns.forEach((nodes, c) => nodes.forEach((node, r) => pos.set(node.id, { x: 10 + c * (W + GX), y: 10 + r * (H + GY) })));
  const width = 20 + columns.length * (W + GX) - GX;
  const height = 20 + Math.max(...columns.map((c) => c.length)) * (H + GY) - GY;
  const graph = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "plan graph" });
  graph.append(svg("defs", {}, svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
    svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#9ca3af" }))));
  for (const edge of plan.edges) {
    const a = pos.get(edge.from), b = pos.get(edge.to);
    if (!a || !b) continue;
    const x1 = a.x + W, y1 = a.y + H / 2, x2 = b.x, y2 = b.y + H / 2;
    graph.append(svg("path", { class: "edge", d: `M ${x1} ${y1} C ${x1 + GX / 2} ${y1}, ${x2 - GX / 2} ${y2}, ${x2} ${y2}` }));
  }
  for (const node of plan.nodes) {
    const p = pos.get(node.id);
    const g = svg("g", { class: "node " + token(node.status), transform: `translate(${p.x},${p.y})`, "data-node": node.id });
    g.append(svg("title", {}, "$" + node.id + " " + node.tool + " " + JSON.stringify(node.arguments)));
    g.append(svg("rect", { width: W, height: H, rx: 6 }));
    g.append(svg("text", { x: 8, y: 17 }, oneLine("$" + node.id + " " + node.tool, 28)));
    const state = node.status + (node.step !== null ? " · step " + node.step : "");
    g.append(svg("text", { x: 8, y: 34, class: "axis" }, oneLine(state + " " + JSON.stringify(node.arguments), 30)));
    graph.append(g);
  }
  box.replaceChildren(el("h3", {}, "Plan"), el("section", { class: "panel" }, graph));
}

// ----------------------------------------------------------------------- timeline

function renderTimeline(box, steps, run) {
  if (!steps.length) {
    box.replaceChildren(el("p", { class: "muted" }, "No steps yet."));
    return;
  }
  const end = Math.max(run.seconds || 0, ...steps.map((s) => s.offset + s.seconds)) || 1;
  const W = 1000, LEFT = 40;
  const row = Math.min(14, 240 / steps.length); // long runs: rows under a pixel, 240 px high
  const height = Math.ceil(steps.length * row) + 22;
  const chart = svg("svg", { viewBox: `0 0 ${W + LEFT + 10} ${height}`, width: "100%", height, preserveAspectRatio: "none", role: "img", "aria-label": "timeline" });
  const scale = W / end;
  steps.forEach((s, i) => {
    const kind = s.error ? "error" : token(s.kind);
    const bar = svg("rect", { class: "bar " + kind, x: LEFT + s.offset * scale, y: i * row, width: Math.max(1.5, s.seconds * scale), height: Math.max(1, row - (row > 3 ? 1 : 0)) });
    bar.append(svg("title", {}, `#${s.index} ${s.kind} ${s.name} · at ${seconds(s.offset)} · ${seconds(s.seconds)}`));
    chart.append(bar);
  });
  chart.append(svg("text", { class: "axis", x: LEFT, y: height - 6 }, "0"));
  chart.append(svg("text", { class: "axis", x: LEFT + W, y: height - 6, "text-anchor": "end" }, seconds(end)));
  box.replaceChildren(el("section", { class: "panel" }, chart));
}

// ----------------------------------------------------------------------- steps

function gist(step) {
  if (step.kind === "model") {
    if (step.calls.length) return step.calls.map((c) => c.name + "(" + oneLine(c.arguments, 80) + ")").join(", ");
    return oneLine(step.output, 200);
  }
  if (step.kind === "ask") return "? " + oneLine(step.question || step.output, 200);
  return oneLine(step.input, 80) + " → " + oneLine(step.output, 160);
}

function stepNode(step, runId) {
  const classes = ["step", "kind-" + token(step.kind)];
  if (step.error) classes.push("has-error");
  const node = el("details", { class: classes.join(" "), "data-index": step.index });
  const tokens = step.prompt_tokens || step.completion_tokens ? ` · ${step.prompt_tokens}+${step.completion_tokens} tok` : "";
  node.append(
    el(
      "summary",
      {},
      el("span", { class: "idx" }, step.index),
      el("span", { class: "badge kind" }, step.role ? step.kind + " · " + step.role : step.kind),
      el("span", { class: "name" }, step.name),
      el("span", { class: "gist" }, gist(step)),
      step.error ? el("span", { class: "badge err" }, step.error) : null,
      step.repairs.length ? el("span", { class: "badge repair" }, "repair") : null,
      step.answered_by ? el("span", { class: "badge route" }, "by " + step.answered_by) : null,
      el("span", { class: "meta" }, "+" + seconds(step.offset) + " · " + seconds(step.seconds) + tokens),
    ),
  );
  node.addEventListener("toggle", () => {
    if (node.open && !node.dataset.built) {
      node.dataset.built = "1";
      node.append(stepBody(step, runId));
    }
  });
  return node;
}

function field(title, value) {
  return [el("h4", {}, title), el("pre", {}, json(value))];
}

function stepBody(step, runId) {
  const body = el("div", { class: "body" });
  const add = (...nodes) => body.append(...nodes.flat());
  if (step.repairs.length) add(el("h4", {}, "Repairs"), el("ul", { class: "repairs" }, ...step.repairs.map((r) => el("li", {}, r))));
  if (step.kind === "model") {
    if (step.calls.length) add(field("Calls", step.calls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }))));
    add(field(step.calls.length ? "Raw reply" : "Response", step.output));
    if (step.error) add(field("Error", step.error));
    if (step.answered_by) add(field("Answered by", step.answered_by));
    if (step.route) add(field("Routing decision", step.route));
    add(field("Turn", step.input));
    const convo = el("div", { class: "conversation" });
    const button = el("button", { type: "button" }, "Show the conversation before this turn");
    button.addEventListener("click", async () => {
      button.disabled = true;
      try {
        const data = await getJSON(`/api/runs/${encodeURIComponent(runId)}/steps/${step.index}/conversation`);
        convo.replaceChildren(
          el("p", { class: "muted" }, "As stored in the trace: the system prompt and the loop's correction notes are not stored."),
          ...data.messages.map(messageNode),
        );
        button.remove();
      } catch (error) {
        convo.replaceChildren(el("p", { class: "outcome err" }, error.message));
        button.disabled = false;
      }
    });
    add(el("h4", {}, "Prompt"), button, convo);
  } else if (step.kind === "ask") {
    add(field("Question", step.question || ""));
    if (step.input && !(typeof step.input === "object" && "question" in step.input)) add(field("Call arguments", step.input));
    add(field("Answer / outcome", step.output));
  } else {
    if (step.call_id) add(field("Call id", step.call_id));
    add(field("Arguments", step.input));
    add(field(step.error ? "Result (error)" : "Result", step.output));
    if (step.error) add(field("Error", step.error));
  }
  add(el("p", { class: "muted" }, `started +${seconds(step.offset)} · took ${seconds(step.seconds)}`));
  return body;
}

function messageNode(message) {
  const parts = [el("span", { class: "role" }, message.role + (message.name ? " (" + message.name + ")" : ""))];
  if (message.content) parts.push(el("pre", {}, message.content));
  if (message.tool_calls && message.tool_calls.length) parts.push(el("pre", {}, json(message.tool_calls)));
  if (message.tool_call_id) parts.push(el("span", { class: "muted" }, "for call " + message.tool_call_id));
  return el("div", { class: "msg" }, ...parts);
}

// ----------------------------------------------------------------------- routing

function route() {
  view += 1;
  stopPolling();
  const match = location.hash.match(/^#\/run\/(.+)$/);
  if (match) showRun(decodeURIComponent(match[1]));
  else showRuns();
}

window.addEventListener("hashchange", route);
route();
