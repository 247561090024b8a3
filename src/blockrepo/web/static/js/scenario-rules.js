// Who may do what with a scenario under review, and how its review reads: proposing it, approving it,
// merging it, its comments gathered into threads, and the roles it is shared with. No DOM, no network
// (tests/js/scenario-rules.test.mjs).

const MERGE = "MERGE_SCENARIOS";
const APPROVE = "APPROVE_SCENARIOS";

function holds(user, permission) {
  return Boolean(user?.supervisor) || (user?.functionalPermissions || []).includes(permission);
}

export function isOwner(scenario, user) {
  return Boolean(user?.login) && scenario.owner === user.login;
}

// Its owner or a supervisor runs the scenario: proposes it for review (again, to change its reviewers),
// settles its conflicts, closes and reopens it. Its reviewers only read, comment and approve.
export function mayManage(scenario, user) {
  return isOwner(scenario, user) || Boolean(user?.supervisor);
}

// Whether the user may list the accounts to choose reviewers from (GET /api/administration/users).
export function mayListUsers(user) {
  return holds(user, "ADMIN_USERS");
}

// Whether the user may list the roles to share a scenario with (GET /api/administration/roles); anybody
// else types a role's name.
export function mayListRoles(user) {
  return holds(user, "ADMIN_ROLES");
}

// A reviewer, or a holder of APPROVE_SCENARIOS, approves a proposed, open scenario; never its owner.
export function mayApprove(scenario, user) {
  if (scenario.state !== "open" || !scenario.review || isOwner(scenario, user)) return false;
  return scenario.review.reviewers.includes(user?.login) || holds(user, APPROVE);
}

export function hasApproved(review, login) {
  return Boolean(review?.approvals?.some((approval) => approval.user === login));
}

// Approvals of the current version still missing: 0 once approved, at least 1 until then.
export function missingApprovals(review) {
  if (!review || review.approved) return 0;
  return Math.max(review.requiredApprovals - (review.approvals?.length || 0), 1);
}

// "approved", or "needs 1 more approval"; null while not proposed.
export function approvalText(review) {
  if (!review) return null;
  const missing = missingApprovals(review);
  if (!missing) return "approved";
  return `needs ${missing} more approval${missing === 1 ? "" : "s"}`;
}

// Why the merge button is disabled, or null when it is not: the permission, then the approvals. A main
// protected by the server (every scenario needs approvals) is not known here; the merge then says so (409).
export function mergeBlockedReason(scenario, user) {
  if (scenario.state !== "open") return `The scenario is ${scenario.state}.`;
  if (!holds(user, MERGE)) return "Merging needs the permission MERGE_SCENARIOS.";
  if (scenario.review && !scenario.review.approved) {
    return `Waiting for the reviewers: the current version ${approvalText(scenario.review)}.`;
  }
  return null;
}

// Logins typed into a text field, separated by commas, semicolons or spaces; each once, in order.
export function parseLogins(text) {
  return [
    ...new Set(
      String(text || "")
        .split(/[\s,;]+/)
        .map((login) => login.trim())
        .filter(Boolean),
    ),
  ];
}

// Accounts that may review: enabled, not the owner, by login.
export function reviewerCandidates(users, owner) {
  return (users || [])
    .filter((user) => user.enabled !== false && user.login !== owner)
    .sort((a, b) => a.login.localeCompare(b.login));
}

// The comments as threads: the scenario's own (no element), and each element's (its fields' too), oldest
// first.
export function commentThreads(comments) {
  const ordered = [...(comments || [])].sort(
    (a, b) => String(a.createdAt).localeCompare(String(b.createdAt)) || a.id - b.id,
  );
  const elements = new Map();
  const scenario = [];
  for (const comment of ordered) {
    if (comment.element === null || comment.element === undefined) {
      scenario.push(comment);
      continue;
    }
    if (!elements.has(comment.element)) elements.set(comment.element, []);
    elements.get(comment.element).push(comment);
  }
  return { scenario, elements };
}

export function commentsLabel(count) {
  return count ? `Comments (${count})` : "Comment";
}

// --- sharing: PUT /api/scenarios/{key}/shares ------------------------------------------------------------

export function accessLabel(access) {
  return access === "write" ? "can edit" : "can view";
}

export function shareLabel(share) {
  return `${share.role} (${accessLabel(share.access)})`;
}

// "Shared with: Architects (can edit), Readers (can view)", or that it is shared with none.
export function sharesText(shares) {
  if (!shares?.length) return "Not shared with any role";
  return `Shared with: ${shares.map(shareLabel).join(", ")}`;
}

// The request body from the form's rows ({role, access}): names trimmed, rows without a name left out (an
// added row not filled in). `sent[i]` is the form row of the body's i-th share, which the server's error
// pointers (/shares/<i>/role) name. Duplicates and unknown roles are the server's to refuse.
export function sharesRequest(rows) {
  const shares = [];
  const sent = [];
  (rows || []).forEach((row, index) => {
    const role = String(row.role ?? "").trim();
    if (!role) return;
    shares.push({ role, access: row.access === "write" ? "write" : "read" });
    sent.push(index);
  });
  return { body: { shares }, sent };
}

// The form rows a refusal points at (/shares/<i>/role, through `sent` of sharesRequest), each once.
export function refusedShareRows(problem, sent) {
  const rows = new Set();
  for (const error of problem?.errors || []) {
    const match = /^\/shares\/(\d+)(?:\/|$)/.exec(error.pointer || "");
    if (match && Number(match[1]) < sent.length) rows.add(sent[Number(match[1])]);
  }
  return [...rows].sort((a, b) => a - b);
}

// The roles to offer: by name, without the built-in Supervisor (a supervisor sees every scenario anyway),
// yet with every role already shared (even that one, if shared through the API), so no row loses its role.
export function roleChoices(roles, shares) {
  const names = new Set((roles || []).filter((role) => !role.builtin).map((role) => role.name));
  for (const share of shares || []) names.add(share.role);
  return [...names].sort((a, b) => a.localeCompare(b));
}
