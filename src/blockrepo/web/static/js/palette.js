// Colours shared by pages and diagrams: the built-in statuses, and an enum literal's own colour if it has one.

export const STATUS_COLORS = { CURRENT: "#2f7d4f", PLANNED: "#2b6cb0", TARGET: "#805ad5", INACTIVE: "#8a94a6" };

export function literalColor(property, value) {
  const literal = property?.literals?.find((l) => l.name === value);
  return literal?.color || (property?.name === "status" ? STATUS_COLORS[value] : null) || null;
}
