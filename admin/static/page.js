// The page: its state, the poll that reads the API and redraws, and the
// controls that send the API's state-changing requests.

const pollMillis = 500;
// Topics, storage, connections and transactions change slowly: read
// them every few polls.
const slowEvery = 4;

let clockKind = "real";
let nowMS = 0;
let showIdle = false;
let cardWidth = 0;         // the width inside a group card, in px, as the page was last laid out
const results = new Map(); // group -> {text, ok}: the answer to its last button
let last = null;           // the last answers drawn: {groups, events, faults, topics, storage, connections, transactions}

// render draws the answers a; fresh says they are a new reading, whose
// committed offsets go into the rates (a redraw after a click reads
// nothing new).
function render(a, fresh) {
  last = a;
  clockKind = a.groups.clock;
  nowMS = a.groups.now_ms;
  if (fresh) sample(a.groups.groups, nowMS);
  cardWidth = document.getElementById("groups").clientWidth - 32; // a card's padding and border
  document.getElementById("clock-kind").textContent = a.groups.clock;
  document.getElementById("now").textContent = clockKind === "manual" ? a.groups.now_ms + " ms" : when(a.groups.now_ms);
  document.getElementById("controls").hidden = clockKind !== "manual";
  document.getElementById("groups").replaceChildren(...groupList(a.groups.groups, a.events.rebalances));
  document.getElementById("fencing").replaceChildren(fencingTable(a.events.fencing));
  document.getElementById("faults").replaceChildren(faultsTable(a.faults && a.faults.faults));
  document.getElementById("topic-notices").replaceChildren(topicNotices(a.events.topics));
  document.getElementById("topics").replaceChildren(topicsTable(a.topics));
  document.getElementById("connections").replaceChildren(connectionsTable(a.connections));
  document.getElementById("storage").replaceChildren(storageList(a.storage));
  document.getElementById("transactions").replaceChildren(transactionsTable(a.transactions));
}

function redraw() {
  if (last) render(last);
}

// With an --admin-token, the page is opened as /#token=<token> and sends
// it with every request; the fragment never reaches the server's logs.
const token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
function headers(extra) {
  const h = Object.assign({}, extra || {});
  if (token) h["Authorization"] = "Bearer " + token;
  return h;
}

async function getJSON(path) {
  const r = await fetch(path, { cache: "no-store", headers: headers() });
  if (!r.ok) throw new Error(path + ": " + r.status);
  return r.json();
}

let polls = 0;
async function poll() {
  const status = document.getElementById("status");
  try {
    const slow = polls % slowEvery === 0;
    const [groups, events, faults, topics, storage, connections, transactions] = await Promise.all([getJSON("/v1/groups"), getJSON("/v1/events"),
      getJSON("/v1/faults"), slow ? getJSON("/v1/topics") : null, slow ? getJSON("/v1/storage") : null, slow ? getJSON("/v1/connections") : null,
      slow ? getJSON("/v1/transactions") : null]);
    render({ groups, events, faults, topics: topics || (last && last.topics), storage: storage || (last && last.storage),
      connections: connections || (last && last.connections), transactions: transactions || (last && last.transactions) }, true);
    polls++;
    status.className = "ok";
    status.textContent = "live \u00b7 updated " + new Date().toLocaleTimeString([], { hour12: false });
  } catch (e) {
    status.className = "down";
    status.textContent = "disconnected: " + e.message;
  } finally {
    setTimeout(poll, pollMillis);
  }
}

// send makes a state-changing request as the guard wants it (same origin,
// JSON, the token if any) and hands done the answer, or the error, and
// whether it succeeded.
async function send(method, path, body, done) {
  try {
    const r = await fetch(path, { method, headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body === undefined ? {} : body) });
    done(method + " " + path + " \u2192 " + r.status + " " + (await r.text()).trim(), r.ok);
  } catch (e) {
    done(method + " " + path + ": " + e.message, false);
  }
}

// show puts an answer in the result element id names.
function show(id, text, ok) {
  const out = document.getElementById(id);
  out.textContent = text;
  out.className = ok ? "result" : "result failed";
}

function control(path, body) {
  send("POST", path, body, (text, ok) => show("control-result", text, ok));
}

document.getElementById("advance").addEventListener("click", () =>
  control("/v1/clock/advance", { ms: Number(document.getElementById("advance-ms").value) }));
document.getElementById("expire").addEventListener("click", () => control("/v1/expire"));
document.getElementById("cut-form").addEventListener("submit", ev => {
  ev.preventDefault();
  const group = document.getElementById("cut-group").value, member = document.getElementById("cut-member").value;
  send("POST", "/v1/faults", { keys: [12], group, member, drop: true, count: -1 }, (text, ok) => show("fault-result", text, ok));
});
poll();
