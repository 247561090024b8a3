import assert from "node:assert/strict";
import { test } from "node:test";

import {
  DRAFT_PREFIX,
  DRAFT_VERSION,
  MAX_DRAFT_CHARS,
  MAX_DRAFTS,
  MIN_PING_MS,
  changedValues,
  draftKey,
  draftsToDrop,
  isDraftKey,
  makeDraft,
  pingInterval,
  readDraft,
  shouldPing,
  tickInterval,
} from "../../src/blockrepo/web/static/js/unsaved.js";

const IDLE = 300; // seconds, the server's default
const SECOND = 1000;
const HOUR = 3600 * SECOND;

// What keepalive.js does, on a clock of its own: a tick every tickInterval, a ping when shouldPing says so.
// `active(t)` tells whether the user did something in the tick ending at t. Returns the ping times.
function simulate({ idle = IDLE, until, active, hidden = () => false }) {
  const interval = pingInterval(idle);
  const tick = tickInterval(interval);
  const state = { lastPing: 0, lastActivity: -1 };
  const pings = [];
  for (let now = tick; now <= until; now += tick) {
    if (active(now)) state.lastActivity = now - tick / 2;
    if (shouldPing({ ...state, now, hidden: hidden(now), interval })) {
      state.lastPing = now;
      pings.push(now);
    }
  }
  return pings;
}

// The server renews a session at most every tenth of the idle timeout: a renewed session lives 0.9 of it.
const SAFE_GAP = 0.9 * IDLE * SECOND;

test("pingInterval: a third of the idle timeout, never below a second; none without a timeout", () => {
  assert.equal(pingInterval(300), 100 * SECOND);
  assert.equal(pingInterval(1), MIN_PING_MS);
  assert.equal(pingInterval(null), null);
  assert.equal(pingInterval(undefined), null);
  assert.equal(pingInterval(0), null);
  assert.equal(pingInterval(-5), null);
  assert.equal(pingInterval("300"), null);
  assert.equal(pingInterval(Number.POSITIVE_INFINITY), null);
});

test("tickInterval: four checks per interval, at least every quarter second", () => {
  assert.equal(tickInterval(100 * SECOND), 25 * SECOND);
  assert.equal(tickInterval(MIN_PING_MS), 250);
});

test("shouldPing: only after activity since the last ping, in a visible tab, once the interval is up", () => {
  const base = { lastPing: 0, lastActivity: 10, hidden: false, interval: 100 };
  assert.equal(shouldPing({ ...base, now: 100 }), true);
  assert.equal(shouldPing({ ...base, now: 99 }), false, "too soon");
  assert.equal(shouldPing({ ...base, now: 500, lastActivity: 0 }), false, "no activity since the ping");
  assert.equal(shouldPing({ ...base, now: 500, lastActivity: -1 }), false);
  assert.equal(shouldPing({ ...base, now: 500, hidden: true }), false, "hidden tab");
  assert.equal(shouldPing({ ...base, now: 500, interval: null }), false, "no session to keep");
});

test("an active user's session is renewed well inside the idle timeout", () => {
  // Typing now and then: once every 20 seconds for an hour.
  const pings = simulate({ until: HOUR, active: (t) => t % (20 * SECOND) < tickInterval(100 * SECOND) });
  assert.ok(pings.length > 20, `${pings.length} pings`);
  const gaps = [pings[0], ...pings.slice(1).map((t, i) => t - pings[i])];
  assert.ok(Math.max(...gaps) < SAFE_GAP / 2, `longest gap ${Math.max(...gaps)} ms`);
  assert.ok(Math.min(...gaps) >= pingInterval(IDLE), "never more often than the interval");
});

test("a form left open over the weekend still expires: no ping without activity", () => {
  const lastTouch = 10 * 60 * SECOND;
  const pings = simulate({ until: 60 * HOUR, active: (t) => t <= lastTouch });
  assert.ok(pings.length > 0);
  // One more ping may carry the last activity; after it the session is left to its idle timeout.
  assert.ok(pings.at(-1) <= lastTouch + pingInterval(IDLE) + tickInterval(pingInterval(IDLE)));
  assert.equal(simulate({ until: 60 * HOUR, active: () => false }).length, 0);
});

test("a hidden tab does not ping; its activity counts once it is shown again", () => {
  // Pings at 100 s and 200 s; typing until 225 s, hidden at 250 s, before the next ping was due.
  const hiddenFrom = 250 * SECOND;
  const hiddenUntil = 2 * HOUR;
  const hidden = (t) => t > hiddenFrom && t < hiddenUntil;
  const pings = simulate({ until: 3 * HOUR, active: (t) => t <= 225 * SECOND, hidden });
  assert.deepEqual(pings.slice(0, 2), [100 * SECOND, 200 * SECOND]);
  assert.equal(pings.filter(hidden).length, 0);
  assert.deepEqual(pings.slice(2), [hiddenUntil], "the typing before it was hidden, once shown");
});

test("a short idle timeout gets a short interval, still inside it", () => {
  for (const idle of [3, 10, 60, 3600]) {
    const pings = simulate({ idle, until: 20 * idle * SECOND, active: () => true });
    const gaps = pings.slice(1).map((t, i) => t - pings[i]);
    assert.ok(Math.max(...gaps) <= 0.5 * idle * SECOND, `idle ${idle}: gap ${Math.max(...gaps)}`);
  }
});

test("draftKey: route, scenario and revision, unambiguous", () => {
  const key = draftKey({ route: "/element/InformationSystem/12/edit", scenario: "Q3", revision: 5 });
  assert.ok(key.startsWith(DRAFT_PREFIX) && isDraftKey(key));
  assert.equal(key, `${DRAFT_PREFIX}["/element/InformationSystem/12/edit","Q3",5]`);
  const main = draftKey({ route: "/element/InformationSystem/12/edit", revision: 5 });
  assert.notEqual(main, key, "main and a scenario keep drafts apart");
  assert.equal(main, draftKey({ route: "/element/InformationSystem/12/edit", scenario: "", revision: 5 }));
  assert.notEqual(main, draftKey({ route: "/element/InformationSystem/12/edit", revision: 6 }));
  assert.equal(draftKey({ route: "/new/Project" }), `${DRAFT_PREFIX}["/new/Project",null,null]`);
  assert.equal(isDraftKey("blockrepo.scenario"), false);
  assert.equal(isDraftKey(null), false);
});

test("changedValues: the fields that differ from the form as opened; references by id", () => {
  const initial = {
    name: ["ERP"],
    costs: [850000],
    tags: [],
    systems: [{ id: 1, name: "CRM" }],
  };
  const current = {
    name: ["ERP"],
    costs: [900000],
    tags: ["core"],
    systems: [{ id: 1, name: "CRM (renamed meanwhile)" }],
  };
  assert.deepEqual(changedValues(current, initial), { costs: [900000], tags: ["core"] });
  assert.deepEqual(changedValues(initial, initial), {});
  assert.deepEqual(changedValues({ flag: [false] }, {}), { flag: [false] });
  assert.deepEqual(changedValues({ tags: [] }, {}), {}, "empty is as absent");
});

test("makeDraft: who, when and the changed values; nothing when nothing changed or it is too big", () => {
  const draft = makeDraft({ user: "anna", values: { costs: [1] }, savedAt: 1700000000000 });
  assert.deepEqual(draft, {
    version: DRAFT_VERSION,
    user: "anna",
    savedAt: 1700000000000,
    values: { costs: [1] },
  });
  assert.equal(makeDraft({ user: "anna", values: {}, savedAt: 1 }), null);
  assert.equal(makeDraft({ user: null, values: { costs: [1] }, savedAt: 1 }), null);
  const huge = { description: ["x".repeat(MAX_DRAFT_CHARS)] };
  assert.equal(makeDraft({ user: "anna", values: huge, savedAt: 1 }), null);
});

test("readDraft: only a well-formed draft of the same user", () => {
  const text = JSON.stringify(makeDraft({ user: "anna", values: { costs: [1] }, savedAt: 5 }));
  assert.deepEqual(readDraft(text, "anna").values, { costs: [1] });
  assert.equal(readDraft(text, "bernd"), null, "another user's work is not offered");
  for (const broken of [
    null,
    "",
    "not json",
    "[]",
    "null",
    JSON.stringify({ version: 99, user: "anna", savedAt: 5, values: {} }),
    JSON.stringify({ version: DRAFT_VERSION, user: "anna", savedAt: "5", values: {} }),
    JSON.stringify({ version: DRAFT_VERSION, user: "anna", savedAt: 5, values: [] }),
    JSON.stringify({ version: DRAFT_VERSION, user: "anna", savedAt: 5, values: { costs: 1 } }),
  ])
    assert.equal(readDraft(broken, "anna"), null, String(broken));
});

test("draftsToDrop: unreadable drafts, then the oldest beyond the limit; other keys untouched", () => {
  const entry = (n, user = "anna") => [
    draftKey({ route: `/element/T/${n}/edit`, revision: 1 }),
    JSON.stringify(makeDraft({ user, values: { name: [`n${n}`] }, savedAt: n })),
  ];
  const entries = [entry(3), entry(1, "bernd"), entry(2), ["blockrepo.scenario", "{}"]];
  entries.push([draftKey({ route: "/broken" }), "{"]);
  assert.deepEqual(draftsToDrop(entries, 2), [draftKey({ route: "/broken" }), entries[1][0]]);
  assert.deepEqual(draftsToDrop(entries.slice(0, 3)), []);
  const many = Array.from({ length: MAX_DRAFTS + 3 }, (_, n) => entry(n));
  assert.deepEqual(
    draftsToDrop(many).sort(),
    many
      .slice(0, 3)
      .map(([key]) => key)
      .sort(),
  );
});
