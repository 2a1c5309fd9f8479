// Drawing helpers: elements, ids, colours, times, offsets. Every string
// from the broker goes in through text nodes, never as HTML: member ids
// are client input.

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined) continue;
    if (k === "class") e.className = v;
    else if (k === "style") e.style.cssText = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) {
    if (k === null || k === undefined) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}

// Ids up to idWhole characters are drawn as they are; a longer one is
// split so that, when its column is narrow, its head gives way to an
// ellipsis and its last idTail characters (where ids of one client
// differ: the pod name's end, -000004) stay, the whole id in the
// tooltip.
const idWhole = 24;
const idTail = 12;

// id draws an id: its text, or for a long one its head and tail.
function id(s) {
  if (s.length <= idWhole) return s;
  return el("span", { class: "id", title: s }, el("span", { class: "head" }, s.slice(0, -idTail)), el("span", { class: "tail" }, s.slice(-idTail)));
}

// color gives each member a hue of its own: FNV-1a over its id, so that
// ids differing in one character (gamma-000003, gamma-000004) still land
// far apart.
function color(member) {
  let h = 2166136261;
  for (const c of member) h = Math.imul(h ^ c.charCodeAt(0), 16777619);
  return "hsl(" + ((h >>> 0) % 360) + ", 65%, 82%)";
}

function swatch(member) {
  return el("span", { class: "swatch", style: "background:" + color(member) });
}

// who draws a member: its swatch and its id, in a box that keeps them on
// one line and lets a long id give way.
function who(member, attrs) {
  return el("span", Object.assign({ class: "who mono" }, attrs), swatch(member), id(member));
}

function when(ms) {
  if (clockKind === "manual") return "t=" + ms + " ms";
  const d = new Date(ms);
  return d.toLocaleTimeString([], { hour12: false }) + "." + String(d.getMilliseconds()).padStart(3, "0");
}

function partitions(list) {
  return list.map(t => t.topic + " " + t.partitions.join(",")).join("; ") || "none";
}

// ms renders a duration: exact milliseconds below 10 s (the exercises
// live there), seconds above.
function ms(n) {
  return Math.abs(n) < 10000 ? n + " ms" : (n / 1000).toFixed(2).replace(/\.?0+$/, "") + " s";
}

function offset(n) {
  return n === null || n === undefined ? "\u2013" : String(n);
}

// perSecond renders a rate: one decimal below 100, whole numbers above.
function perSecond(r) {
  return (Math.abs(r) < 100 ? r.toFixed(1) : String(Math.round(r))) + "/s";
}

// lease draws a member's session lease on one line: a bar of what is
// left, then "left/total" in seconds (milliseconds for sessions under a
// second, as in the chapter's exercises).
function lease(m) {
  const left = m.deadline_ms - nowMS;
  const total = m.session_timeout_ms;
  const title = "session " + ms(total) + ", deadline " + m.deadline;
  if (left < 0) return el("span", { class: "lease overdue", title }, "overdue " + ms(-left));
  const text = total >= 1000 ? (left / 1000).toFixed(1) + "/" + (total / 1000).toFixed(1) + " s" : left + "/" + total + " ms";
  const share = total > 0 ? Math.min(100, 100 * left / total) : 0;
  return el("span", { class: "lease" + (share < 25 ? " low" : ""), title },
    el("span", { class: "bar" }, el("i", { style: "width:" + share.toFixed(1) + "%" })), text);
}

// heads draws a table's header row: each entry a label, or [label,
// attrs] for a cell with a class (its column's width) or a tooltip.
function heads(...cells) {
  return el("thead", {}, el("tr", {}, ...cells.filter(c => c !== null).map(c =>
    Array.isArray(c) ? el("th", c[1], c[0]) : el("th", {}, c))));
}

// idWidth sizes a column of ids, such as the owners of the partitions,
// for the longest of them (monospace: 7.6 px a character) plus extra px
// (a swatch, the padding, a mark beside the id), and at most share of
// the card's width: the other columns get the rest, and only ids longer
// than that share give way. (A table's fixed layout takes a width in px
// or in percent, not the smaller of the two.)
function idWidth(ids, share, extra) {
  const n = Math.max(8, ...ids.map(s => s.length));
  const want = Math.ceil(n * 7.6 + extra);
  return "width: " + (cardWidth > 0 ? Math.min(want, Math.floor(share * cardWidth)) : want) + "px";
}

// scroll wraps a table so that, should it not fit, it scrolls inside its
// own box and never makes the page scroll sideways.
function scroll(table) {
  return el("div", { class: "scroll" }, table);
}
