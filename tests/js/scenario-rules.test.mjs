import assert from "node:assert/strict";
import { test } from "node:test";

import {
  accessLabel,
  approvalText,
  commentThreads,
  commentsLabel,
  hasApproved,
  isOwner,
  mayApprove,
  mayListRoles,
  mayListUsers,
  mayManage,
  mergeBlockedReason,
  missingApprovals,
  parseLogins,
  refusedShareRows,
  reviewerCandidates,
  roleChoices,
  shareLabel,
  sharesRequest,
  sharesText,
} from "../../src/blockrepo/web/static/js/scenario-rules.js";

const OWNER = { login: "anna", supervisor: false, functionalPermissions: ["MERGE_SCENARIOS"] };
const REVIEWER = { login: "bernd", supervisor: false, functionalPermissions: [] };
const APPROVER = { login: "dora", supervisor: false, functionalPermissions: ["APPROVE_SCENARIOS"] };
const SUPERVISOR = { login: "system", supervisor: true, functionalPermissions: [] };

function scenario(proposed = null, state = "open") {
  return { key: "erp-1", owner: "anna", state, review: proposed };
}

function review(approvals = [], { required = 1, reviewers = ["bernd", "carl"] } = {}) {
  return {
    reviewers,
    requiredApprovals: required,
    proposedAt: "2026-11-29T10:00:00.000Z",
    approvals: approvals.map((user) => ({ user, approvedAt: "2026-11-29T11:00:00.000Z" })),
    approved: approvals.length >= required,
  };
}

test("the owner or a supervisor manages a scenario; its reviewers do not", () => {
  assert.ok(isOwner(scenario(), OWNER));
  assert.ok(!isOwner(scenario(), REVIEWER));
  assert.ok(!isOwner(scenario(), null));
  assert.ok(mayManage(scenario(), OWNER));
  assert.ok(mayManage(scenario(), SUPERVISOR));
  assert.ok(!mayManage(scenario(review()), REVIEWER));
});

test("listing accounts to choose reviewers from needs ADMIN_USERS (a supervisor has it)", () => {
  assert.ok(mayListUsers(SUPERVISOR));
  assert.ok(mayListUsers({ login: "x", functionalPermissions: ["ADMIN_USERS"] }));
  assert.ok(!mayListUsers(OWNER));
  assert.ok(!mayListUsers(null));
});

test("a reviewer or a holder of APPROVE_SCENARIOS approves a proposed open scenario; never its owner", () => {
  assert.ok(mayApprove(scenario(review()), REVIEWER));
  assert.ok(mayApprove(scenario(review()), APPROVER));
  assert.ok(mayApprove(scenario(review()), SUPERVISOR));
  assert.ok(!mayApprove(scenario(review(), "merged"), REVIEWER));
  assert.ok(!mayApprove(scenario(null), REVIEWER), "not proposed");
  assert.ok(!mayApprove(scenario(review()), OWNER));
  assert.ok(!mayApprove(scenario(review()), { ...OWNER, supervisor: true }), "an owner, even a supervisor");
  assert.ok(!mayApprove(scenario(review([], { reviewers: ["carl"] })), REVIEWER));
  assert.ok(hasApproved(review(["bernd"]), "bernd"));
  assert.ok(!hasApproved(review(["bernd"]), "carl"));
  assert.ok(!hasApproved(null, "bernd"));
});

test("the approvals missing, in words", () => {
  assert.equal(approvalText(null), null);
  assert.equal(missingApprovals(null), 0);
  assert.equal(approvalText(review([], { required: 2 })), "needs 2 more approvals");
  assert.equal(approvalText(review(["bernd"], { required: 2 })), "needs 1 more approval");
  assert.equal(approvalText(review(["bernd"])), "approved");
  assert.equal(missingApprovals(review(["bernd"])), 0);
  // Not approved however many approvals are listed (the server decides): at least one more.
  assert.equal(missingApprovals({ ...review(["bernd"]), approved: false }), 1);
});

test("the merge is held back without the permission, and while approvals are missing", () => {
  assert.equal(mergeBlockedReason(scenario(), OWNER), null);
  assert.equal(mergeBlockedReason(scenario(), SUPERVISOR), null);
  assert.equal(mergeBlockedReason(scenario(), REVIEWER), "Merging needs the permission MERGE_SCENARIOS.");
  assert.equal(
    mergeBlockedReason(scenario(review([], { required: 2 })), OWNER),
    "Waiting for the reviewers: the current version needs 2 more approvals.",
  );
  assert.equal(mergeBlockedReason(scenario(review(["bernd"])), OWNER), null);
  assert.equal(mergeBlockedReason(scenario(null, "closed"), OWNER), "The scenario is closed.");
});

test("parseLogins: separated by commas, semicolons or spaces, each once", () => {
  assert.deepEqual(parseLogins(" bernd, carl;dora  bernd ,, "), ["bernd", "carl", "dora"]);
  assert.deepEqual(parseLogins(""), []);
  assert.deepEqual(parseLogins(undefined), []);
});

test("reviewer candidates: enabled accounts other than the owner, by login", () => {
  const users = [
    { login: "carl", enabled: true },
    { login: "anna", enabled: true },
    { login: "bernd", enabled: true },
    { login: "old", enabled: false },
  ];
  assert.deepEqual(
    reviewerCandidates(users, "anna").map((user) => user.login),
    ["bernd", "carl"],
  );
  assert.deepEqual(reviewerCandidates(undefined, "anna"), []);
});

test("comments gathered into the scenario's thread and each element's, oldest first", () => {
  const comments = [
    { id: 3, element: 12, field: "Criticality", text: "c", createdAt: "2026-11-29T10:03:00.000Z" },
    { id: 1, element: null, field: null, text: "a", createdAt: "2026-11-29T10:01:00.000Z" },
    { id: 2, element: 12, field: null, text: "b", createdAt: "2026-11-29T10:02:00.000Z" },
    { id: 4, element: 14, field: null, text: "d", createdAt: "2026-11-29T10:02:00.000Z" },
  ];
  const threads = commentThreads(comments);
  assert.deepEqual(
    threads.scenario.map((c) => c.id),
    [1],
  );
  assert.deepEqual(
    threads.elements.get(12).map((c) => c.id),
    [2, 3],
  );
  assert.deepEqual(
    threads.elements.get(14).map((c) => c.id),
    [4],
  );
  assert.equal(threads.elements.has(13), false);
  assert.deepEqual(commentThreads(undefined).scenario, []);
  assert.equal(commentsLabel(0), "Comment");
  assert.equal(commentsLabel(2), "Comments (2)");
});

test("listing roles to share with needs ADMIN_ROLES (a supervisor has it)", () => {
  assert.ok(mayListRoles(SUPERVISOR));
  assert.ok(mayListRoles({ login: "x", functionalPermissions: ["ADMIN_ROLES"] }));
  assert.ok(!mayListRoles({ login: "x", functionalPermissions: ["ADMIN_USERS"] }));
  assert.ok(!mayListRoles(OWNER));
  assert.ok(!mayListRoles(null));
});

test("the roles a scenario is shared with, in words", () => {
  assert.equal(accessLabel("read"), "can view");
  assert.equal(accessLabel("write"), "can edit");
  assert.equal(shareLabel({ role: "Reader", access: "read" }), "Reader (can view)");
  assert.equal(
    sharesText([
      { role: "Architects", access: "write" },
      { role: "Readers", access: "read" },
    ]),
    "Shared with: Architects (can edit), Readers (can view)",
  );
  assert.equal(sharesText([]), "Not shared with any role");
  assert.equal(sharesText(undefined), "Not shared with any role");
});

test("the form rows as the request body: names trimmed, unnamed rows left out, access read or write", () => {
  const rows = [
    { role: " Architects ", access: "write" },
    { role: "", access: "write" },
    { role: "Readers", access: "read" },
    { role: "   ", access: "read" },
    { role: "Auditors", access: "anything else" },
  ];
  assert.deepEqual(sharesRequest(rows), {
    body: {
      shares: [
        { role: "Architects", access: "write" },
        { role: "Readers", access: "read" },
        { role: "Auditors", access: "read" },
      ],
    },
    sent: [0, 2, 4],
  });
  // No rows (or only empty ones): an empty list, which unshares the scenario.
  assert.deepEqual(sharesRequest([{ role: "", access: "read" }]), { body: { shares: [] }, sent: [] });
  assert.deepEqual(sharesRequest(undefined), { body: { shares: [] }, sent: [] });
});

test("a refusal's pointers lead back to the form's rows", () => {
  const problem = {
    errors: [
      { pointer: "/shares/1/role", code: "unknown_role", message: "no role 'Nobody'" },
      { pointer: "/shares/2/role", code: "duplicate_role", message: "'Readers' is named before" },
      { pointer: "/shares/1/role", code: "unknown_role", message: "again" },
      { pointer: "/shares/9/role", code: "unknown_role", message: "out of range" },
      { pointer: "/name", code: "other", message: "not a share" },
    ],
  };
  assert.deepEqual(refusedShareRows(problem, [0, 2, 4]), [2, 4]);
  assert.deepEqual(refusedShareRows({}, [0]), []);
  assert.deepEqual(refusedShareRows(undefined, []), []);
});

test("the roles to offer: by name, without the built-in Supervisor unless already shared", () => {
  const roles = [
    { name: "Reader", builtin: false },
    { name: "Supervisor", builtin: true },
    { name: "Business editor", builtin: false },
  ];
  assert.deepEqual(roleChoices(roles, []), ["Business editor", "Reader"]);
  assert.deepEqual(roleChoices(roles, [{ role: "Supervisor", access: "read" }]), [
    "Business editor",
    "Reader",
    "Supervisor",
  ]);
  assert.deepEqual(roleChoices(undefined, undefined), []);
});
