// Colours shared by pages and diagrams: the built-in statuses, and an enum literal's own colour if any.

export const STATUS_COLORS = {
  CURRENT: "#2f7d4f",
  PLANNED: "#2b6cb0",
  TARGET: "#805ad5",
  INACTIVE: "#8a94a6",
};

// Only plain hex colours go into a style attribute: a literal's colour is data an administrator typed.
const HEX_COLOR = /^#[0-9a-fA-F]{3,8}$/;

export function literalColor(property, value) {
  const literal = property?.literals?.find((l) => l.name === value);
  if (literal?.color && HEX_COLOR.test(literal.color)) return literal.color;
  return (property?.name === "status" ? STATUS_COLORS[value] : null) || null;
}
