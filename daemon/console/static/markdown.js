// A small Markdown renderer for model answers. It builds DOM nodes and sets
// only textContent and vetted href values, never innerHTML, so nothing in
// an answer can become markup or script: "<img onerror=…>" stays text.

const safeLink = /^(https?:|mailto:)/i;

// render returns a DocumentFragment for the Markdown text md.
export function render(md) {
  const out = document.createDocumentFragment();
  const lines = md.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  let para = [];
  const flush = () => {
    if (para.length) {
      const p = document.createElement("p");
      inline(p, para.join("\n"));
      out.appendChild(p);
      para = [];
    }
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*(```|~~~)\s*([\w+-]*)\s*$/);
    if (fence) {
      flush();
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) {
        body.push(lines[i]);
        i++;
      }
      i++; // the closing fence, or the end of a still-streaming block
      const pre = document.createElement("pre");
      const code = document.createElement("code");
      if (fence[2]) code.dataset.lang = fence[2];
      code.textContent = body.join("\n");
      pre.appendChild(code);
      out.appendChild(pre);
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    if (heading) {
      flush();
      const h = document.createElement("h" + Math.min(6, heading[1].length + 2));
      inline(h, heading[2]);
      out.appendChild(h);
      i++;
      continue;
    }
    const item = line.match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
    if (item) {
      flush();
      const ordered = /\d/.test(item[1]);
      const list = document.createElement(ordered ? "ol" : "ul");
      while (i < lines.length) {
        const m = lines[i].match(/^\s*([-*+]|\d+[.)])\s+(.*)$/);
        if (!m || /\d/.test(m[1]) !== ordered) break;
        const li = document.createElement("li");
        inline(li, m[2]);
        list.appendChild(li);
        i++;
      }
      out.appendChild(list);
      continue;
    }
    if (line.trim() === "") {
      flush();
    } else {
      para.push(line);
    }
    i++;
  }
  flush();
  return out;
}

// Inline spans, earliest match first: code, links, bold, italics.
const spans = [
  { re: /`([^`\n]+)`/, make: (m) => el("code", m[1]) },
  {
    re: /\[([^\]\n]+)\]\(([^)\s]+)\)/,
    make: (m) => {
      if (!safeLink.test(m[2])) return document.createTextNode(m[0]);
      const a = el("a", m[1]);
      a.href = m[2];
      a.rel = "noopener noreferrer nofollow";
      a.target = "_blank";
      return a;
    },
  },
  { re: /\*\*([^*\n]+)\*\*|__([^_\n]+)__/, make: (m) => el("strong", m[1] ?? m[2]) },
  { re: /\*([^*\n]+)\*|\b_([^_\n]+)_\b/, make: (m) => el("em", m[1] ?? m[2]) },
];

function el(tag, text) {
  const e = document.createElement(tag);
  e.textContent = text;
  return e;
}

function inline(parent, text) {
  while (text.length) {
    let best = null;
    for (const s of spans) {
      const m = s.re.exec(text);
      if (m && (best === null || m.index < best.m.index)) best = { m, s };
    }
    if (!best) {
      parent.appendChild(document.createTextNode(text));
      return;
    }
    if (best.m.index > 0) parent.appendChild(document.createTextNode(text.slice(0, best.m.index)));
    parent.appendChild(best.s.make(best.m));
    text = text.slice(best.m.index + best.m[0].length);
  }
}
