// Who is logged in, what they may do, and the metamodel they may see (both read once per login).

import { get } from "./api.js";
import { DEFAULT_GROUP } from "./format.js";

export const session = { user: null, metamodel: null };

export async function loadSession() {
  const [user, metamodel] = await Promise.all([
    get("/api/administration/users/current"),
    get("/api/metamodel"),
  ]);
  session.user = user.data;
  session.metamodel = metamodel.data;
  return session;
}

export function resetSession() {
  session.user = null;
  session.metamodel = null;
}

export function can(type, action) {
  const rights = session.user?.typePermissions?.[type] || [];
  return rights.includes(action);
}

export function hasFunction(name) {
  return (session.user?.functionalPermissions || []).includes(name);
}

function groupRights(group) {
  const name = group || DEFAULT_GROUP;
  return (
    (session.user?.attributeGroups || []).find((entry) => entry.name === name) || {
      read: false,
      write: false,
    }
  );
}

export const groupReadable = (group) => groupRights(group).read;
export const groupWritable = (group) => groupRights(group).write;

export function visibleTypes() {
  return (session.metamodel?.types || [])
    .filter((type) => !type.hidden && can(type.name, "read"))
    .sort((a, b) => a.position - b.position);
}

export function typeDef(name) {
  return (session.metamodel?.types || []).find((type) => type.name === name) || null;
}

export function typeLabel(name) {
  return typeDef(name)?.displayName || name;
}

// Properties a user may read: the API leaves unreadable groups out already; this also keeps them out of
// forms built from the metamodel.
export function readableProperties(type) {
  return (typeDef(type)?.properties || []).filter((property) => groupReadable(property.group));
}
