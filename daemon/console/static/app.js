// npud's web console: polls the daemon's status, streams chats through the
// Ollama API and manages models. Everything goes to this page's own origin.
import { render } from "./markdown.js";

const $ = (id) => document.getElementById(id);
const keyStore = "npud-api-key"; // sessionStorage: this tab only

// ---- talking to the daemon ------------------------------------------------

class NeedKey extends Error {}

function headers(extra) {
  const h = { ...extra };
  const key = sessionStorage.getItem(keyStore);
  if (key) h.Authorization = "Bearer " + key;
  return h;
}

// call sends a request and returns the response, turning an error answer
// (Ollama's {"error": …} or OpenAI's {"error": {"message": …}}) into a
// thrown Error with the server's own words.
async function call(method, path, body, signal) {
  const form = body instanceof FormData;
  const init = { method, headers: headers(body && !form ? { "Content-Type": "application/json" } : {}), signal };
  if (body) init.body = form ? body : JSON.stringify(body);
  const resp = await fetch(path, init);
  if (resp.status === 401) {
    askForKey(sessionStorage.getItem(keyStore) ? "The API key was refused." : "");
    throw new NeedKey("this server needs an API key");
  }
  if (!resp.ok) {
    let msg = resp.status + " " + resp.statusText;
    try {
      const e = await resp.json();
      msg = typeof e.error === "string" ? e.error : e.error?.message ?? msg;
    } catch { /* not JSON: keep the status line */ }
    throw new Error(msg);
  }
  return resp;
}

// ndjson reads a streamed NDJSON response, calling onLine for each object.
async function ndjson(resp, onLine) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let nl;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      if (line) onLine(JSON.parse(line));
    }
  }
  if (buf.trim()) onLine(JSON.parse(buf));
}

function showError(err) {
  if (err instanceof NeedKey || err?.name === "AbortError") return;
  const box = $("error");
  box.textContent = String(err?.message ?? err);
  box.hidden = false;
  clearTimeout(showError.timer);
  showError.timer = setTimeout(() => { box.hidden = true; }, 8000);
}

function askForKey(why) {
  const form = $("key-form");
  form.hidden = false;
  form.querySelector("p").textContent = (why ? why + " " : "") +
    "This npud needs an API key. It is kept in this browser tab only and sent to this server only.";
  $("key-input").focus();
}

$("key-form").addEventListener("submit", (e) => {
  e.preventDefault();
  sessionStorage.setItem(keyStore, $("key-input").value.trim());
  $("key-input").value = "";
  $("key-form").hidden = true;
  refresh();
  loadModels();
});

// ---- tabs ------------------------------------------------------------------

for (const b of document.querySelectorAll("button.tab")) {
  b.addEventListener("click", () => {
    for (const o of document.querySelectorAll("button.tab")) o.classList.toggle("active", o === b);
    for (const p of document.querySelectorAll(".tab-panel")) p.hidden = p.id !== "tab-" + b.dataset.tab;
    $("error").hidden = true; // an error belongs to the tab it happened on
    if (b.dataset.tab === "models") loadModels();
    if (b.dataset.tab === "transcribe") loadSpeechModels();
  });
}

// ---- status ------------------------------------------------------------------

function duration(seconds) {
  if (seconds < 0) return "until unloaded";
  const d = Math.floor(seconds / 86400), h = Math.floor(seconds / 3600) % 24;
  const m = Math.floor(seconds / 60) % 60, s = seconds % 60;
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s}s`;
  return `${s}s`;
}

function row(tbody, cells) {
  const tr = document.createElement("tr");
  for (const c of cells) {
    const td = document.createElement("td");
    if (c instanceof Node) td.appendChild(c); else td.textContent = c;
    tr.appendChild(td);
  }
  tbody.appendChild(tr);
  return tr;
}

function badge(text, kind) {
  const s = document.createElement("span");
  s.className = "badge " + kind;
  s.textContent = text;
  return s;
}

// niceCeiling is the smallest round value (1, 1.5, 2, 2.5, 3, 4, 5, 6 or
// 8 × 10^k) at or above v: an axis top people read at a glance.
function niceCeiling(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v * (1 - 1e-9)) return m * p;
  return 10 * p;
}

function axisLabel(v) {
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1).replace(/\.0$/, "") : String(+v.toFixed(2));
}

// chart draws one point per request, oldest on the left, on an axis from
// 0 to a round value above the largest point (so no line touches the top),
// with its labels in a margin of their own (so none covers the line). A
// request without the figure (one token: no gap) is skipped. What it drew
// is left on the canvas's data attributes for the browser tests.
function chart(canvas, values) {
  const ratio = window.devicePixelRatio || 1;
  const cw = canvas.clientWidth || canvas.width, ch = canvas.clientHeight || canvas.height;
  canvas.width = Math.round(cw * ratio);
  canvas.height = Math.round(ch * ratio);
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, cw, ch);
  const left = 40, right = 8, top = 10, bottom = 16;
  const w = cw - left - right, h = ch - top - bottom;
  const points = values.map((v, i) => ({ v, i })).filter((p) => p.v !== null && p.v !== undefined && Number.isFinite(p.v));
  const highest = points.length ? Math.max(...points.map((p) => p.v)) : 0;
  const axisTop = niceCeiling(highest * 1.1);
  const y = (v) => top + h - (v / axisTop) * h;
  const x = (i) => left + (values.length > 1 ? (i / (values.length - 1)) * w : w / 2);

  ctx.font = "11px system-ui";
  ctx.textBaseline = "middle";
  ctx.textAlign = "right";
  for (const v of [0, axisTop / 2, axisTop]) {
    ctx.strokeStyle = "#dde1e6";
    ctx.lineWidth = 1;
    ctx.beginPath();
    ctx.moveTo(left, Math.round(y(v)) + 0.5);
    ctx.lineTo(left + w, Math.round(y(v)) + 0.5);
    ctx.stroke();
    ctx.fillStyle = "#667";
    ctx.fillText(axisLabel(v), left - 6, y(v));
  }
  ctx.textAlign = "left";
  ctx.textBaseline = "alphabetic";
  ctx.fillText(values.length ? "last " + values.length + " requests" : "no requests yet", left, ch - 3);

  ctx.strokeStyle = "#0068b5";
  ctx.fillStyle = "#0068b5";
  ctx.lineWidth = 2;
  ctx.beginPath();
  points.forEach((p, k) => (k ? ctx.lineTo(x(p.i), y(p.v)) : ctx.moveTo(x(p.i), y(p.v))));
  ctx.stroke();
  for (const p of points) {
    ctx.beginPath();
    ctx.arc(x(p.i), y(p.v), 2.5, 0, 2 * Math.PI);
    ctx.fill();
  }
  canvas.dataset.points = String(points.length);
  canvas.dataset.axisTop = String(axisTop);
  canvas.dataset.plotTop = String(top);
  canvas.dataset.highestY = points.length ? String(Math.min(...points.map((p) => y(p.v)))) : "";
  canvas.dataset.labelRight = String(left - 6);
  canvas.dataset.plotLeft = String(left);
  return highest;
}

// updateCharts draws the daemon's own record of the last requests, so a
// page opened now shows what came before it.
function updateCharts(s) {
  const recent = s.recent ?? [];
  const series = {
    ttft: recent.map((r) => r.ttft_ms),
    itl: recent.map((r) => r.itl_ms ?? null),
    tps: recent.map((r) => r.tokens_per_second ?? null),
  };
  for (const [name, unit] of [["ttft", "ms"], ["itl", "ms"], ["tps", "tok/s"]]) {
    const values = series[name];
    const highest = chart($("chart-" + name), values);
    const last = [...values].reverse().find((v) => v !== null && v !== undefined);
    $("last-" + name).textContent = last === undefined ? "" :
      "last " + last.toFixed(1) + " " + unit + " · max " + highest.toFixed(1) + " " + unit;
  }
}

let knownModels = [];

function showStatus(s) {
  $("version").textContent = "v" + s.version;
  const engine = $("engine");
  engine.textContent = s.simulated ? "engine: " + s.engine + " (SIMULATED)" : "engine: " + s.engine;
  engine.className = "badge " + (s.simulated ? "bad" : "good");
  $("simulated-banner").hidden = !s.simulated;
  $("simulated-why").textContent = s.simulated_why ? "Why: " + s.simulated_why + "." : "";
  // --engine auto started OpenVINO after a pull, without a restart.
  const changed = $("engine-changed");
  changed.hidden = !s.engine_changed;
  changed.textContent = s.engine_changed ? "The engine changed from " + s.engine_changed.from + " to " +
    s.engine_changed.to + " at " + new Date(s.engine_changed.at).toLocaleTimeString() + ": " + s.engine_changed.reason + "." : "";
  const state = $("state");
  state.textContent = s.status;
  state.className = "badge " + (s.status === "ok" ? "good" : "warn");
  $("active-streams").textContent = s.active_streams;
  $("running").textContent = s.running;
  $("queued").textContent = s.queued;
  $("uptime").textContent = duration(s.uptime_seconds);
  $("restarts-card").hidden = s.worker_restarts === undefined;
  $("worker-restarts").textContent = s.worker_restarts ?? "–";

  const devices = $("devices");
  devices.replaceChildren();
  for (const d of s.devices) row(devices, [d.name, d.full_name || "", badge(d.healthy ? "healthy" : "unhealthy", d.healthy ? "good" : "bad")]);
  if (!s.devices.length) row(devices, ["none", "the engine lists no device", ""]);

  const loaded = $("loaded");
  loaded.replaceChildren();
  for (const m of s.loaded) {
    row(loaded, [m.id, m.device || "", String(m.context_length),
      m.preloaded ? "preloaded" : m.in_use ? "in use (" + m.in_use + ")" : duration(m.keep_alive_seconds)]);
  }
  // Loads in progress: a first compile for an NPU takes minutes.
  for (const l of s.loading || []) {
    row(loaded, [l.id, "", "", badge(l.status + "… " + duration(l.seconds), l.first_compile ? "warn" : "good")]);
  }
  if (!s.loaded.length && !(s.loading || []).length) row(loaded, ["no model loaded", "", "", ""]);

  if (s.models.join("\n") !== knownModels.join("\n")) {
    knownModels = s.models;
    const select = $("chat-model");
    const chosen = select.value;
    select.replaceChildren(...s.models.map((id) => {
      const o = document.createElement("option");
      o.value = o.textContent = id;
      return o;
    }));
    if (s.models.includes(chosen)) select.value = chosen;
  }
  updateCharts(s);
}

async function refresh() {
  if (!$("key-form").hidden) return; // nothing to ask until there is a key
  try {
    const resp = await call("GET", "/npud/v1/status");
    showStatus(await resp.json());
  } catch (err) {
    showError(err);
  }
}

// ---- chat --------------------------------------------------------------------

let conversation = [];
let running = null; // the AbortController of the answer being streamed

function addMessage(role, text) {
  const div = document.createElement("div");
  div.className = "msg " + role;
  if (role === "assistant") div.appendChild(render(text)); else div.textContent = text;
  $("chat-log").appendChild(div);
  $("chat-log").scrollTop = $("chat-log").scrollHeight;
  return div;
}

async function send(prompt) {
  const model = $("chat-model").value;
  if (!model) { showError(new Error("no model to chat with")); return; }
  conversation.push({ role: "user", content: prompt });
  addMessage("user", prompt);
  const answer = addMessage("assistant", "");
  answer.dataset.state = "streaming";
  const messages = [];
  const system = $("chat-system").value.trim();
  if (system) messages.push({ role: "system", content: system });
  messages.push(...conversation);
  const temperature = parseFloat($("chat-temperature").value);

  running = new AbortController();
  $("chat-send").disabled = true;
  $("chat-stop").disabled = false;
  $("chat-timings").textContent = "waiting for the first token…";
  const started = performance.now();
  let text = "", thinking = "", first = null, final = null, drawn = false;
  const redraw = () => {
    drawn = false;
    const parts = [];
    if (thinking) {
      // The model's reasoning, apart and folded: text only, as the answer.
      const d = document.createElement("details");
      d.className = "thinking";
      const summary = document.createElement("summary");
      summary.textContent = "Thinking";
      const p = document.createElement("p");
      p.textContent = thinking;
      d.append(summary, p);
      parts.push(d);
    }
    parts.push(render(text));
    answer.replaceChildren(...parts);
    $("chat-log").scrollTop = $("chat-log").scrollHeight;
  };
  try {
    const body = { model, messages, stream: true, options: Number.isFinite(temperature) ? { temperature } : {} };
    if ($("chat-think").checked) body.think = true;
    const resp = await call("POST", "/api/chat", body, running.signal);
    await ndjson(resp, (chunk) => {
      if (chunk.error) throw new Error(chunk.error);
      const piece = chunk.message?.content ?? "";
      thinking += chunk.message?.thinking ?? "";
      if ((piece || chunk.message?.thinking) && first === null) {
        first = performance.now() - started;
        $("chat-timings").textContent = "first token after " + first.toFixed(0) + " ms";
      }
      text += piece;
      if (!drawn) { drawn = true; requestAnimationFrame(redraw); }
      if (chunk.done) final = chunk;
    });
    redraw();
    conversation.push({ role: "assistant", content: text });
    answer.dataset.state = "done";
    const s = (ns) => ns / 1e9;
    const parts = [];
    if (first !== null) parts.push("TTFT " + first.toFixed(0) + " ms");
    if (final?.eval_count) {
      parts.push(final.eval_count + " tokens");
      if (final.eval_duration) parts.push((final.eval_count / s(final.eval_duration)).toFixed(1) + " tok/s");
    }
    if (final?.prompt_eval_count !== undefined) parts.push(final.prompt_eval_count + " prompt tokens");
    if (final?.done_reason) parts.push("finished: " + final.done_reason);
    $("chat-timings").textContent = parts.join(" · ");
  } catch (err) {
    redraw();
    if (err.name === "AbortError") {
      // What was shown stays in the conversation, as the CLI keeps it.
      if (text) conversation.push({ role: "assistant", content: text });
      answer.dataset.state = "stopped";
      $("chat-timings").textContent = "stopped" + (first !== null ? " · TTFT " + first.toFixed(0) + " ms" : "");
    } else {
      conversation.pop(); // the question goes unanswered: let it be asked again
      answer.dataset.state = "error";
      answer.className = "msg error";
      answer.textContent = "Error: " + err.message;
      $("chat-timings").textContent = "";
    }
  } finally {
    running = null;
    $("chat-send").disabled = false;
    $("chat-stop").disabled = true;
    refresh();
  }
}

$("chat-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const prompt = $("chat-prompt").value;
  if (!prompt.trim() || running) return;
  $("chat-prompt").value = "";
  send(prompt);
});
$("chat-prompt").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey) {
    e.preventDefault();
    $("chat-form").requestSubmit();
  }
});
$("chat-stop").addEventListener("click", () => running?.abort());
$("chat-clear").addEventListener("click", () => {
  running?.abort();
  conversation = [];
  $("chat-log").replaceChildren();
  $("chat-timings").textContent = "";
});

// ---- transcription ---------------------------------------------------------------
// The file goes to OpenAI's /v1/audio/transcriptions (or /translations) as
// a multipart form; text is streamed (transcript.text.delta events, one
// per window of the recording), subtitles come whole. What comes back is
// shown as text, never as markup.

async function loadSpeechModels() {
  try {
    const resp = await call("GET", "/v1/models");
    const ids = (await resp.json()).data.filter((m) => (m.capabilities || []).includes("audio")).map((m) => m.id);
    const select = $("stt-model");
    const chosen = select.value;
    select.replaceChildren(...ids.map((id) => {
      const o = document.createElement("option");
      o.value = o.textContent = id;
      return o;
    }));
    if (ids.includes(chosen)) select.value = chosen;
    $("stt-send").disabled = !ids.length;
    if (!ids.length) $("stt-info").textContent = "No speech (Whisper) model is served: pull one on the Models tab.";
  } catch (err) {
    showError(err);
  }
}

// sse reads a server-sent event stream, calling onData with each event's
// parsed data; [DONE] ends it.
async function sse(resp, onData) {
  const reader = resp.body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  const take = (block) => {
    for (const line of block.split("\n")) {
      if (!line.startsWith("data: ")) continue; // comments: heartbeats
      const data = line.slice(6);
      if (data !== "[DONE]") onData(JSON.parse(data));
    }
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let end;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      take(buf.slice(0, end));
      buf = buf.slice(end + 2);
    }
  }
  if (buf.trim()) take(buf);
}

let sttAbort = null;

$("stt-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const file = $("stt-file").files[0];
  if (!file) return;
  const task = $("stt-task").value, format = $("stt-format").value;
  const stream = task === "transcribe" && format === "text";
  const form = new FormData();
  form.append("file", file, file.name);
  form.append("model", $("stt-model").value);
  form.append("response_format", stream ? "json" : format);
  if (stream) form.append("stream", "true");
  const out = $("stt-text"), info = $("stt-info");
  out.textContent = "";
  out.dataset.state = "running";
  info.textContent = "Decoding and " + (task === "translate" ? "translating" : "transcribing") + " " + file.name + "…";
  sttAbort = new AbortController();
  $("stt-send").disabled = true;
  $("stt-stop").disabled = false;
  const started = performance.now();
  try {
    const path = task === "translate" ? "/v1/audio/translations" : "/v1/audio/transcriptions";
    const resp = await call("POST", path, form, sttAbort.signal);
    if (stream) {
      await sse(resp, (ev) => {
        if (ev.error) throw new Error(ev.error.message);
        if (ev.type === "transcript.text.delta") out.textContent += ev.delta;
        if (ev.type === "transcript.text.done") {
          out.textContent = ev.text;
          if (ev.usage?.seconds) info.textContent = ev.usage.seconds + " s of audio";
        }
      });
    } else {
      out.textContent = await resp.text();
      info.textContent = "";
    }
    out.dataset.state = "done";
    info.textContent = (info.textContent ? info.textContent + ", " : "") +
      "done in " + ((performance.now() - started) / 1000).toFixed(1) + " s";
  } catch (err) {
    out.dataset.state = err?.name === "AbortError" ? "stopped" : "failed";
    info.textContent = out.dataset.state === "stopped" ? "Stopped." : "Failed.";
    showError(err);
  } finally {
    sttAbort = null;
    $("stt-send").disabled = false;
    $("stt-stop").disabled = true;
  }
});

$("stt-stop").addEventListener("click", () => sttAbort?.abort());

// ---- models ------------------------------------------------------------------

function bytes(n) {
  if (!n) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return n.toFixed(i ? 1 : 0) + " " + units[i];
}

function button(text, cls, onClick) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = text;
  if (cls) b.className = cls;
  b.addEventListener("click", onClick);
  return b;
}

async function loadModels() {
  try {
    const [tags, ps] = await Promise.all([
      call("GET", "/api/tags").then((r) => r.json()),
      call("GET", "/api/ps").then((r) => r.json()),
    ]);
    const loaded = new Set(ps.models.map((m) => m.name));
    const tbody = $("models");
    tbody.replaceChildren();
    for (const m of tags.models) {
      const actions = document.createElement("span");
      if (loaded.has(m.name)) {
        actions.appendChild(button("Unload", "", () => unload(m.name)));
      }
      // The simulated engine's models are built in: nothing to delete.
      if (m.details?.format !== "simulated") actions.appendChild(button("Delete", "danger", () => remove(m.name)));
      row(tbody, [m.name, bytes(m.size), m.modified_at ? new Date(m.modified_at).toLocaleString() : "", actions]);
    }
    if (!tags.models.length) row(tbody, ["no models: pull one", "", "", ""]);
  } catch (err) {
    showError(err);
  }
}

async function unload(name) {
  try {
    await call("POST", "/api/generate", { model: name, keep_alive: 0 });
  } catch (err) {
    showError(err);
  }
  loadModels();
  refresh();
}

async function remove(name) {
  if (!confirm("Delete " + name + " from the models folder?")) return;
  try {
    await call("DELETE", "/api/delete", { model: name });
  } catch (err) {
    showError(err);
  }
  loadModels();
  refresh();
}

let pulling = null;

$("pull-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  if (pulling) return;
  const name = $("pull-name").value.trim();
  const bar = $("pull-progress"), status = $("pull-status");
  pulling = new AbortController();
  $("pull-start").disabled = true;
  $("pull-cancel").disabled = false;
  bar.value = 0;
  status.textContent = "starting…";
  status.classList.remove("failed");
  try {
    const resp = await call("POST", "/api/pull", { model: name, stream: true }, pulling.signal);
    await ndjson(resp, (p) => {
      if (p.error) throw new Error(p.error);
      if (p.total) {
        bar.max = p.total;
        bar.value = p.completed ?? 0;
        status.textContent = p.status + " " + bytes(p.completed ?? 0) + " / " + bytes(p.total);
      } else {
        status.textContent = p.status;
      }
    });
    bar.max = 1;
    bar.value = 1;
  } catch (err) {
    // Said in the pull form, where it happened; the page-wide banner
    // would follow the user to the other tabs.
    status.textContent = err.name === "AbortError" ? "cancelled" : "failed: " + err.message;
    status.classList.toggle("failed", err.name !== "AbortError");
  } finally {
    pulling = null;
    $("pull-start").disabled = false;
    $("pull-cancel").disabled = true;
    loadModels();
  }
});
$("pull-cancel").addEventListener("click", () => pulling?.abort());

// ---- start ---------------------------------------------------------------------

refresh();
setInterval(refresh, 1000);
