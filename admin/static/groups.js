// The group cards: members, partitions (the chapter's four states), the
// group's total lag and consumption rate, the timeline, and the folded
// list of idle groups.

// An Empty group with no activity for this long (by the broker's clock),
// or none since the broker started, is folded into the idle list.
const idleMillis = 5 * 60 * 1000;
// Idle groups named on the folded line, at most; the rest are counted.
const maxIdleNamed = 12;
// The consumption rate is measured over this much of the broker's clock.
const rateWindowMillis = 10000;

// rates holds, by group, readings of its committed offsets, oldest first:
// {t: the broker's clock, committed: Map("topic-partition" -> offset),
// lag: total_lag}. The first reading is kept of each instant (a manual
// clock stands still between advances), and the newest reading at least
// rateWindowMillis old stays as the base.
const rates = new Map();

// sample records the groups' committed offsets at the broker's time now,
// and forgets the groups that are gone.
function sample(groups, now) {
  const seen = new Set();
  for (const g of groups) {
    seen.add(g.group);
    const list = rates.get(g.group) || [];
    if (list.length === 0 || now > list[list.length - 1].t) list.push({ t: now, committed: committedOf(g), lag: g.total_lag });
    while (list.length > 2 && list[1].t <= now - rateWindowMillis) list.shift();
    rates.set(g.group, list);
  }
  for (const name of rates.keys()) if (!seen.has(name)) rates.delete(name);
}

// committedOf maps each partition with a committed position (not a reset
// sentinel) to its offset.
function committedOf(g) {
  const m = new Map();
  for (const p of g.partitions) {
    if (p.committed !== null && !p.committed_reset) m.set(p.topic + "-" + p.partition, p.committed);
  }
  return m;
}

// rate is how many records g committed per second, from the base reading
// to g as it is now: {perSecond, records, millis, lagFrom}; null before
// two readings at different instants.
function rate(g) {
  const list = rates.get(g.group);
  if (!list || list.length === 0 || list[0].t >= nowMS) return null;
  const base = list[0];
  let records = 0;
  for (const [name, off] of committedOf(g)) {
    if (base.committed.has(name)) records += off - base.committed.get(name);
  }
  const millis = nowMS - base.t;
  return { perSecond: records * 1000 / millis, records, millis, lagFrom: base.lag };
}

// lagSummary draws a group's total lag and its consumption rate.
function lagSummary(g) {
  const lag = g.total_lag;
  const r = rate(g);
  const lagTitle = lag === null
    ? "no partition has a commit to measure a lag from"
    : "the sum of the partitions' lags (log end - committed) over those with a commit";
  const rateTitle = r === null
    ? "records committed per second: measured from the next reading of the broker's clock on"
    : r.records + " records committed in the last " + ms(r.millis) + " of the broker's clock" +
      (r.lagFrom !== null && lag !== null ? "; total lag " + r.lagFrom + " \u2192 " + lag : "");
  return el("span", { class: "lagsum" },
    el("span", { class: "total-lag" + (lag > 0 ? " behind" : lag < 0 ? " ahead" : ""), "data-total-lag": lag === null ? "" : lag, title: lagTitle },
      "lag " + offset(lag)),
    " \u00b7 ",
    el("span", { class: "rate", "data-rate": r === null ? "" : r.perSecond.toFixed(1), title: rateTitle },
      "consumed " + (r === null ? "\u2013/s" : perSecond(r.perSecond))));
}

// A consumer (KIP-848) group's member has an epoch, which lags the group
// epoch until its next heartbeat, and a share of the target assignment,
// which it gets whole at that heartbeat: shown where it differs from what
// the member holds now.
function memberEpoch(g, m) {
  if (m.member_epoch >= g.group_epoch) return el("td", { class: "num", "data-member-epoch": m.member_epoch }, String(m.member_epoch));
  return el("td", { class: "num lagging", "data-member-epoch": m.member_epoch,
    title: "behind group epoch " + g.group_epoch + ": catches up at its next heartbeat" }, m.member_epoch + " \u2192 " + g.group_epoch);
}

// A classic member learns of a new generation only from its next answer:
// until then it acts on the assignment of the generation it knows.
function knownGeneration(g, m) {
  if (g.type === "consumer" || m.known_generation === undefined || m.known_generation >= g.generation) return null;
  if (m.known_generation === 0) {
    return el("span", { class: "meta lagging", "data-known-generation": 0,
      title: "joined, but has not synced: it has not been told its assignment" }, " not synced");
  }
  return el("span", { class: "meta lagging", "data-known-generation": m.known_generation,
    title: "was last told of generation " + m.known_generation + ": its next heartbeat or commit is fenced, and it re-joins" },
    " knows gen " + m.known_generation);
}

function assignmentCell(g, m) {
  const current = partitions(m.assignment);
  if (g.type !== "consumer") return el("td", { class: "mono" }, current);
  const target = partitions(m.target_assignment);
  return el("td", { class: "mono" }, current, target === current ? null :
    el("div", { class: "target", "data-target": target, title: "its share of the target, sent whole at its next heartbeat" }, "target: " + target));
}

function groupPath(g) {
  return "/v1/groups/" + encodeURIComponent(g.group);
}

// button makes a control that sends one state-changing request and shows
// the answer beside the group's other controls.
function button(label, attrs, method, path, group, confirmText) {
  const b = el("button", Object.assign({ type: "button" }, attrs), label);
  b.addEventListener("click", () => {
    if (confirmText && !confirm(confirmText)) return;
    send(method, path, undefined, (text, ok) => {
      if (group === null) show("group-result", text, ok);
      else results.set(group, { text, ok });
      redraw();
    });
  });
  return b;
}

// membersTable lists the members. The client id goes under the member id
// unless the member id already starts with it (the broker names a
// classic member after its client: kgo-000001).
function membersTable(g) {
  if (g.members.length === 0) return el("p", { class: "empty" }, "No members.");
  const consumer = g.type === "consumer";
  const rows = g.members.map(m => el("tr", { "data-member": m.member_id },
    el("td", { class: "mono member", title: "client " + m.client_id + " on " + m.client_host }, swatch(m.member_id), id(m.member_id),
      m.member_id === g.leader ? el("span", { class: "meta" }, " leader") : null,
      m.instance_id ? el("span", { class: "meta", "data-instance": m.instance_id, title: "static member: a restart under this instance id keeps its place and generation" },
        " instance " + m.instance_id) : null,
      knownGeneration(g, m),
      m.member_id.startsWith(m.client_id + "-") ? null : el("div", { class: "meta", "data-client": m.client_id }, "client ", id(m.client_id))),
    el("td", {}, m.subscription.join(", ")),
    el("td", {}, lease(m)),
    consumer ? memberEpoch(g, m) : null,
    assignmentCell(g, m),
    el("td", {}, button("expire", { "data-expire": m.member_id, title: "end this member's session now: its next heartbeat or commit is fenced" },
      "POST", groupPath(g) + "/members/" + encodeURIComponent(m.member_id) + "/expire", g.group))));
  return scroll(el("table", { class: "members" },
    heads(["member", { style: idWidth(g.members.map(m => m.member_id), 0.4, consumer ? 30 : 86) }], "subscribes", ["lease left", { class: "w-lease" }],
      consumer ? ["epoch", { class: "num w-epoch" }] : null, "assignment", ["", { class: "w-act" }]),
    el("tbody", {}, ...rows)));
}

// position draws one connection's fetch position: the offset, and whose
// it is, or why the broker cannot tell. The owner's own position shows
// only its swatch (its id is in the owner column); another member's
// shows its id, in the warning colour.
function position(owner) {
  return p => {
    const age = p.age_ms + " ms ago";
    if (p.member_id) {
      const own = p.member_id === owner;
      return el("span", { class: own ? "pos" : "pos other", "data-fetch-member": p.member_id, "data-fetch-offset": p.offset,
        title: "client " + p.client_id + " at " + p.remote + ", " + age + (own ? ": the owner" : ": not the owner") },
        el("span", { class: "off" }, String(p.offset)), swatch(p.member_id), own ? null : el("span", { class: "mono" }, id(p.member_id)),
        el("span", { class: "meta" }, "\u00b7 " + ms(p.age_ms) + " ago"));
    }
    return el("span", { class: "pos unattributed", "data-fetch-offset": p.offset, "data-unattributed": p.unattributed,
      title: "fetch position not attributed to a member: " + p.unattributed },
      el("span", { class: "off" }, String(p.offset)), el("span", { class: "mono" }, id(p.client_id + "@" + p.remote)),
      el("span", { class: "why" }, "unattributed: " + p.unattributed));
  };
}

// partitionsTable sets the chapter's four states side by side for each
// partition: the log, the owner (assignment), where the members read
// (fetch positions) and what the group committed, with the lag; the
// group's total lag below.
function partitionsTable(g) {
  if (g.partitions.length === 0) return el("p", { class: "empty" }, "No subscribed or committed partitions.");
  const committed = new Map(g.committed.map(c => [c.topic + "-" + c.partition, c]));
  const rows = g.partitions.map(p => {
    const name = p.topic + "-" + p.partition;
    const c = committed.get(name);
    const moving = p.target !== undefined && p.target !== p.owner;
    let lagClass = "num lag";
    if (p.lag > 0) lagClass += " behind";
    if (p.lag < 0) lagClass += " ahead";
    return el("tr", { "data-partition": name, "data-owner": p.owner, "data-target": p.target },
      el("td", { class: "mono nowrap", title: name.length > 24 ? name : null }, name),
      el("td", { class: "num state-log" }, offset(p.log_start_offset)),
      el("td", { class: "num", "data-log-end": p.log_end_offset }, offset(p.log_end_offset)),
      el("td", {}, p.owner ? who(p.owner) : el("span", { class: "unowned" }, "unowned"),
        moving ? el("div", { class: "target", "data-target": p.target }, "\u2192 ", p.target ? id(p.target) : "nobody") : null),
      el("td", {}, ...(p.fetch_positions.length ? p.fetch_positions.map(position(p.owner)) : [el("span", { class: "meta" }, "\u2013")])),
      el("td", { class: "num", "data-committed": p.committed, "data-committed-reset": p.committed_reset,
        title: (p.committed_reset ? "the reset sentinel " + p.committed + ": the consumer resets to the " + p.committed_reset + " offset at its next offset fetch; " : "") +
          (c ? "metadata " + JSON.stringify(c.metadata) + ", leader epoch " + c.leader_epoch : "nothing committed") },
        p.committed_reset ? "reset: " + p.committed_reset : offset(p.committed)),
      el("td", { class: lagClass, "data-lag": p.lag,
        title: p.committed_reset ? "no lag: the commit is a reset sentinel" : p.lag === null ? "no commit" : p.lag < 0 ? "committed past the log end" : "log end - committed" }, offset(p.lag)));
  });
  const lagged = g.partitions.filter(p => p.lag !== null).length;
  return scroll(el("table", { class: "parts" },
    heads(["partition", { style: idWidth(g.partitions.map(p => p.topic + "-" + p.partition), 0.22, 14) }],
      ["log start", { class: "num w-off" }], ["log end", { class: "num w-off" }],
      ["owner", { style: idWidth(g.partitions.flatMap(p => [p.owner, p.target || ""]), 0.3, 30) }], "fetch position", ["committed", { class: "num w-commit" }], ["lag", { class: "num w-lag" }]),
    el("tbody", {}, ...rows),
    el("tfoot", {}, el("tr", {},
      el("td", { colspan: 6, class: "meta" }, "total lag, over the " + lagged + " of " + g.partitions.length + " partitions with a commit"),
      el("td", { class: "num", "data-total-lag": g.total_lag === null ? "" : g.total_lag }, offset(g.total_lag))))));
}

function timeline(g, rebalances) {
  const mine = rebalances.filter(r => r.group === g.group).sort((a, b) => a.generation - b.generation || a.seq - b.seq);
  if (mine.length === 0) return el("p", { class: "empty" }, "No rebalance since the broker started.");
  return el("ol", { class: "timeline" }, ...mine.slice(-40).map(r => el("li", {
      class: "timeline-entry" + (r.generation === g.generation ? " current" : ""),
      "data-generation": r.generation, "data-reason": r.reason,
      title: r.assignment.map(a => a.member_id + ": " + partitions(a.partitions)).join("\n") || "no members",
    }, el("b", {}, (g.type === "consumer" ? "epoch " : "gen ") + r.generation), " ", el("span", { class: "reason" }, r.reason),
      r.replaced ? el("span", { class: "mono", "data-replaced": r.replaced }, " " + r.replaced + " \u2192 " + r.replaced_by + " (no new generation)") : null,
      " \u00b7 " + r.state + " \u00b7 " + r.members.length + (r.members.length === 1 ? " member" : " members") + " \u00b7 " + when(r.time_ms))));
}

function groupCard(g, rebalances) {
  const consumer = g.type === "consumer";
  const a = g.last_activity;
  return el("article", { class: "group", "data-group": g.group, "data-state": g.state, "data-generation": g.generation, "data-type": g.type },
    el("header", {}, el("div", { class: "title" },
      el("h3", {}, g.group),
      el("span", { class: "badge state-" + g.state }, g.state),
      el("span", { class: "badge type-" + g.type, title: consumer ? "consumer protocol (KIP-848)" : "classic group protocol" }, g.type),
      consumer
        ? el("span", { class: "generation", "data-generation": g.generation }, "group epoch " + g.group_epoch)
        : el("span", { class: "generation", "data-generation": g.generation }, "generation " + g.generation),
      lagSummary(g),
      consumer
        ? el("span", { class: "meta", "data-assignment-epoch": g.assignment_epoch }, "assignment epoch " + g.assignment_epoch + " \u00b7 assignor " + g.assignor)
        : el("span", { class: "meta" }, (g.protocol ? "protocol " + g.protocol + " \u00b7 " : ""), ...(g.leader ? ["leader ", id(g.leader)] : ["no leader"])),
      a ? el("span", { class: "meta", "data-activity": a.kind }, "last " + a.kind + " " + when(a.time_ms)) : null),
      el("span", { class: "actions" },
        results.has(g.group) ? el("span", { class: "result" + (results.get(g.group).ok ? "" : " failed"), "data-result": g.group },
          results.get(g.group).text) : null,
        g.members.length > 0 ? button("force rebalance", { "data-rebalance": g.group, title: "start a new generation with the same members" },
          "POST", groupPath(g) + "/rebalance", g.group) : null,
        g.state === "Empty" ? button("delete", { class: "danger", "data-delete": g.group, title: "delete this group and its committed offsets (DeleteGroups)" },
          "DELETE", groupPath(g), null, "Delete group " + JSON.stringify(g.group) + " and its committed offsets?") : null)),
    el("h4", {}, "Members (" + g.members.length + ")"), membersTable(g),
    el("h4", {}, "Partitions: log, owner, fetch positions, committed"), partitionsTable(g),
    doubleOwnership(g),
    el("h4", {}, consumer ? "Group epoch timeline" : "Generation timeline"), timeline(g, rebalances));
}

// doubleOwnership says how many partitions two members both fetch now
// (double_ownership in the API), and which, or why it cannot tell.
function doubleOwnership(g) {
  const d = g.double_ownership;
  if (!d) return null;
  const secs = d.window_ms / 1000 + " s";
  if (d.partitions === null) {
    return el("p", { class: "meta", "data-double-ownership": "unknown" }, "Owned twice now: unknown (" + d.reason + ")");
  }
  const list = d.doubly_owned.map(p => p.topic + "-" + p.partition + " by " + p.fetchers.join(" and ")).join("; ");
  return el("p", { class: d.partitions > 0 ? "warn" : "meta", "data-double-ownership": String(d.partitions) },
    "Owned twice now: " + d.partitions + " partition" + (d.partitions === 1 ? "" : "s") +
    " fetched by two members in the last " + secs + (list ? ": " + list : "") + (d.reason ? " (" + d.reason + ")" : ""));
}

// activity orders groups: the latest event or commit first; groups with
// none known after, by name.
function activity(g) {
  return g.last_activity ? g.last_activity.seq : 0;
}

function idle(g) {
  if (g.state !== "Empty") return false;
  return !g.last_activity || nowMS - g.last_activity.time_ms > idleMillis;
}

// idleNames names the folded groups on their line, the most lagging
// first, each with its total lag, so that a group left behind shows
// without opening the list.
function idleNames(quiet) {
  const byLag = quiet.slice().sort((a, b) => (b.total_lag ?? -Infinity) - (a.total_lag ?? -Infinity) || (a.group < b.group ? -1 : 1));
  const named = byLag.slice(0, maxIdleNamed).map(g => el("span", { class: "idle-group", "data-idle-group": g.group,
      "data-total-lag": g.total_lag === null ? "" : g.total_lag, title: g.group + ": total lag " + offset(g.total_lag) },
    el("span", { class: "mono" }, id(g.group)),
    el("span", { class: "lagsum" + (g.total_lag > 0 ? " behind" : "") }, "lag " + offset(g.total_lag))));
  const more = byLag.length - named.length;
  return el("span", { class: "idle-groups" }, ...named, more > 0 ? el("span", { class: "meta" }, " and " + more + " more") : null);
}

function groupList(groups, rebalances) {
  if (groups.length === 0) return [el("p", { class: "empty" }, "No groups yet.")];
  const sorted = groups.slice().sort((a, b) => activity(b) - activity(a) || (a.group < b.group ? -1 : 1));
  const active = sorted.filter(g => !idle(g)).map(g => groupCard(g, rebalances));
  const quiet = sorted.filter(idle);
  if (quiet.length === 0) return active;
  const details = el("details", { class: "idle", "data-idle": quiet.length },
    el("summary", {}, quiet.length + (quiet.length === 1 ? " idle group" : " idle groups") + " (Empty, nothing lately):", idleNames(quiet)),
    ...(showIdle ? quiet.map(g => groupCard(g, rebalances)) : []));
  details.open = showIdle;
  details.addEventListener("toggle", () => {
    if (showIdle !== details.open) { showIdle = details.open; redraw(); }
  });
  return [...active, details];
}
