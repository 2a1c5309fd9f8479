// The side panels: fencing rejections, faults, topics clients named,
// transactions, topics, connections, offsets storage.

// Partitions listed per topic in the topics table, at most.
const maxTopicRows = 50;

function fencingTable(events) {
  if (events.length === 0) return el("p", { class: "empty" }, "None yet.");
  return scroll(el("table", { class: "fences" },
    heads("request", ["code and reason", { class: "w-code" }]),
    el("tbody", {}, ...events.slice().reverse().map(f => el("tr", { "data-code": f.error, "data-reason": f.reason },
      el("td", {}, el("b", {}, f.api), " in ", el("b", {}, id(f.group)), " ", el("span", { class: "when" }, when(f.time_ms)),
        el("div", {}, el("span", { class: "mono" }, f.member_id ? id(f.member_id) : "(no member id)"), f.generation >= 0 ? " gen " + f.generation : "")),
      el("td", {}, el("div", { class: "code" }, f.error), el("div", { class: "reason" }, f.reason)))))));
}

// topicNotices lists, newest first, the topics clients asked for that do
// not exist (a consumer of one waits without a word) and those created
// only because a client named them (a typo makes a topic).
function topicNotices(events) {
  if (!events || events.length === 0) return el("p", { class: "empty" }, "None: every topic asked for exists, and none was auto-created.");
  return el("ul", { class: "notices" }, ...events.slice().reverse().map(n =>
    el("li", { "data-topic-notice": n.kind, "data-topic": n.topic }, n.message, " ", el("span", { class: "when" }, when(n.time_ms)))));
}

// topicsTable lists each topic on a line of its own, with its delete
// button, and under it its partitions by number.
function topicsTable(topics) {
  if (!topics || topics.topics.length === 0) return el("p", { class: "empty" }, "No topics.");
  const rows = [];
  for (const t of topics.topics) {
    rows.push(el("tr", { "data-topic": t.topic },
      el("td", { colspan: 6, class: "mono" }, deleteTopicButton(t.topic), t.topic)));
    for (const p of t.partitions.slice(0, maxTopicRows)) {
      rows.push(el("tr", { "data-topic-partition": t.topic + "-" + p.partition },
        el("td", { class: "num" }, String(p.partition)),
        el("td", { class: "num" }, offset(p.log_start_offset)),
        el("td", { class: "num" }, offset(p.log_end_offset)),
        el("td", { class: "num", "data-lso": p.last_stable_offset, title: "read_committed reads up to here" }, offset(p.last_stable_offset)),
        el("td", { class: "num" }, offset(p.bytes)),
        el("td", { class: "num", title: p.fetch_positions.map(f => f.client_id + "@" + f.remote + " at " + f.offset).join("\n") },
          String(p.fetch_positions.length))));
    }
    if (t.partitions.length > maxTopicRows) {
      rows.push(el("tr", {}, el("td", { colspan: 6, class: "meta" }, "and " + (t.partitions.length - maxTopicRows) + " more partitions of " + t.topic)));
    }
  }
  return scroll(el("table", { class: "topics" },
    heads(["#", { class: "num w-p", title: "partition" }], ["start", { class: "num" }], ["end", { class: "num" }],
      ["stable", { class: "num", title: "last stable offset" }], ["bytes", { class: "num" }],
      ["readers", { class: "num", title: "connections whose fetch position is known" }]),
    el("tbody", {}, ...rows)));
}

function connectionsTable(conns) {
  if (!conns || conns.connections.length === 0) return el("p", { class: "empty" }, "None.");
  return scroll(el("table", { class: "conns" },
    heads("client id, remote", ["user", { class: "w-user" }]),
    el("tbody", {}, ...conns.connections.map(c => el("tr", { "data-remote": c.remote },
      el("td", {}, el("div", { class: "mono" }, c.client_id), el("div", { class: "mono meta" }, c.remote + (c.tls ? " (tls)" : ""))),
      el("td", { "data-user": c.user }, c.user ? c.user + " (" + c.mechanism + ")" : ""))))));
}

// transactionsTable lists every transactional id: its state and age on
// one line; under it its producer id and epoch, the open transaction's
// partitions and its staged offsets, by topic.
function transactionsTable(txns) {
  if (!txns || txns.transactions.length === 0) return el("p", { class: "empty" }, "No transactional producers.");
  const rows = txns.transactions.flatMap(x => {
    const parts = new Map();
    for (const p of x.partitions) parts.set(p.topic, (parts.get(p.topic) || []).concat(p.partition));
    const staged = new Map(); // group -> "topic-partition@offset", ...
    for (const o of x.staged_offsets) staged.set(o.group, (staged.get(o.group) || []).concat(o.topic + "-" + o.partition + "@" + o.offset));
    return [
      el("tr", { class: "txn", "data-txn": x.transactional_id, "data-state": x.state },
        el("td", { class: "mono" }, x.transactional_id),
        el("td", {}, x.state),
        el("td", { class: "num" }, x.age_ms === null ? "\u2013" : ms(x.age_ms))),
      el("tr", { class: "detail", "data-txn-detail": x.transactional_id },
        el("td", { colspan: 3 },
          el("div", { class: "meta" }, "producer " + x.producer_id + " \u00b7 epoch " + x.epoch),
          el("div", {}, "partitions ", el("span", { class: "mono" }, [...parts].map(([t, ps]) => t + " " + ps.join(",")).join("; ") || "\u2013")),
          el("div", {}, "staged offsets ", el("span", { class: "mono" }, [...staged].map(([g, os]) => g + ": " + os.join(", ")).join("; ") || "\u2013")))),
    ];
  });
  return el("div", {},
    el("p", { class: "meta" }, "open " + txns.open + " \u00b7 committed " + txns.committed + " \u00b7 aborted " + txns.aborted + " (timed out " + txns.timed_out + ")"),
    scroll(el("table", { class: "txns" },
      heads("transactional id", ["state", { class: "w-state" }], ["age", { class: "num w-age", title: "of the open transaction" }]),
      el("tbody", {}, ...rows))));
}

// deleteTopicButton deletes a topic (DELETE /v1/topics/{name}, as
// DeleteTopics): its records, its committed offsets, and a new generation
// for every group that subscribes to it.
function deleteTopicButton(topic) {
  const b = el("button", { type: "button", class: "danger", "data-delete-topic": topic,
    title: "delete this topic, its records and its committed offsets (DeleteTopics)" }, "delete");
  b.addEventListener("click", () => {
    if (!confirm("Delete topic " + JSON.stringify(topic) + ", its records and its committed offsets?")) return;
    send("DELETE", "/v1/topics/" + encodeURIComponent(topic), undefined, (text, ok) => {
      show("topic-result", text, ok);
      polls = 0; // the next poll reads the topics again
    });
  });
  return b;
}

function storageList(storage) {
  if (!storage) return el("p", { class: "empty" }, "Not read yet.");
  const o = storage.offsets;
  const items = [
    ["commits made durable", o.commits], ["journal", o.journal_bytes + " bytes in " + o.journal_segments + " segments"],
    ["offsets.json", o.snapshot_bytes + " bytes"], ["folds", o.folds],
    ["failed folds", o.failed_folds, o.failed_folds > 0], ["refused commits", o.refused_commits, o.refused_commits > 0],
    ["torn tails cut", o.cut_tails, o.cut_tails > 0],
  ];
  if (o.last_fold_error) items.push(["last fold error", o.last_fold_error, true]);
  return el("dl", { class: "kv" }, ...items.flatMap(([k, v, bad]) => [el("dt", {}, k), el("dd", { class: bad ? "bad" : null, "data-storage": k }, String(v))]));
}

// faultWhat says in words what a fault matches and does.
function faultWhat(f) {
  const on = [];
  if (f.keys) on.push("keys " + f.keys.join(","));
  if (f.group) on.push("group " + f.group);
  if (f.member) on.push("member " + f.member);
  if (f.clientId) on.push("client " + f.clientId);
  if (f.topic) on.push("topic " + f.topic);
  if (f.partitions) on.push("partitions " + f.partitions.join(","));
  const act = f.err ? "answer code " + f.err : f.delayMs ? "delay " + f.delayMs + " ms" : f.drop ? "drop" : "close";
  return act + (on.length ? " \u00b7 " + on.join(", ") : " \u00b7 every request");
}

// goneWords says how a fault's member went (member_gone's reason).
const goneWords = { "leave": "left", "expiry": "expired", "static member restarted": "replaced", "not seen": "not a member" };

// goneMark flags a fault whose member is in no group the fault can
// match: it matches nothing now, and the tooltip says since when and why.
function goneMark(f) {
  const g = f.member_gone;
  if (!g) return null;
  const word = goneWords[g.reason] || "gone (" + g.reason + ")";
  const title = g.reason === "not seen"
    ? "no member " + f.member + " is in " + (f.group ? "group " + f.group : "any group") + ", and the timeline does not show it leave: this fault matches nothing"
    : "member " + f.member + " " + word + ": group " + g.group + " went on without it at generation " + g.generation + ", " + when(g.time_ms) +
      " (" + g.reason + "). This fault matches nothing unless a member with that id comes back.";
  return el("span", { class: "gone-mark", "data-member-gone": g.reason, title }, "\u26a0 member " + word);
}

function faultsTable(faults) {
  if (!faults || faults.length === 0) return el("p", { class: "empty" }, "No faults.");
  const rows = faults.map(f => el("tr", { "data-fault": f.id, class: f.member_gone ? "gone" : null },
    // member_gone says how the member the fault names left its group;
    // a warning, what the fault names that does not exist now.
    el("td", {}, el("span", { class: "meta" }, "#" + f.id + " "), faultWhat(f), goneMark(f),
      ...(f.warnings || []).map(w => el("div", { class: "warn", "data-fault-warning": f.id,
        title: "the fault is in force, and matches nothing until this exists" }, "\u26a0 " + w)),
      el("div", { class: "meta" }, f.remaining < 0 ? "until removed" : f.remaining + " left")),
    el("td", { class: "num", "data-hits": f.id }, String(f.hits)),
    el("td", {}, faultButton(f.id))));
  return scroll(el("table", { class: "faults" },
    heads("fault", ["hits", { class: "num w-hits" }], ["", { class: "w-act" }]),
    el("tbody", {}, ...rows)));
}

function faultButton(fid) {
  const b = el("button", { type: "button", "data-remove-fault": fid }, "remove");
  b.addEventListener("click", () => send("DELETE", "/v1/faults/" + encodeURIComponent(fid), undefined, (text, ok) => show("fault-result", text, ok)));
  return b;
}
