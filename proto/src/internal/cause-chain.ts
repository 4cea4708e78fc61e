/** How many links of a `cause` chain are inspected before giving up. */
export const MAX_CAUSE_DEPTH = 16;

/**
 * The links of an error's `cause` chain, outermost first: `err`, `err.cause`, `err.cause.cause`, …
 * Stops at a non-object cause (included as the last link), at a repeated object (cycles) and after
 * {@link MAX_CAUSE_DEPTH} links, so hostile or self-referencing errors cannot hang a predicate.
 */
export function causeChain(err: unknown): unknown[] {
  const links: unknown[] = [];
  const seen = new Set<object>();
  let current: unknown = err;
  while (links.length < MAX_CAUSE_DEPTH) {
    if (typeof current !== 'object' || current === null) {
      if (current !== undefined || links.length === 0) links.push(current);
      break;
    }
    if (seen.has(current)) break;
    seen.add(current);
    links.push(current);
    current = readProperty(current, 'cause');
  }
  return links;
}

/** Reads a property without letting a throwing getter escape. */
export function readProperty(value: object, key: string): unknown {
  try {
    return (value as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}
