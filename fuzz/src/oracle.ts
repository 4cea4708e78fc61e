import { type ErrorCode, isTroupeError, type TroupeError } from '@troupe/proto';

/** A case whose untrusted parse blocks the event loop longer than this is a wrong answer. */
export const MAX_BLOCK_MS = 200;

/** The fields an error names: `details.field` or every `details.issues[].field`. */
export function namedFields(err: TroupeError): string[] {
  const details = err.details ?? {};
  const fields: string[] = [];
  if (typeof details['field'] === 'string') fields.push(details['field']);
  const issues = details['issues'];
  if (Array.isArray(issues)) {
    for (const issue of issues) {
      const f = (issue as { field?: unknown } | null)?.field;
      if (typeof f === 'string') fields.push(f);
    }
  }
  return fields;
}

/** Options of {@link judgeError}. */
export interface JudgeErrorOptions {
  /** Codes that are right answers besides `INVALID_ARGUMENT` (e.g. `NOT_FOUND` for a lookup). */
  alsoAllowed?: readonly ErrorCode[];
  /**
   * What a named field must start with (`spec`, `task.yaml`, `arguments`): an error about the
   * input names a field of the input.
   */
  fieldPrefix?: readonly string[];
}

/**
 * Judges a thrown value: `undefined` when it is an `INVALID_ARGUMENT` naming a field (with
 * `fieldPrefix`, a field of the input) in its message, or one of the `alsoAllowed` codes; else
 * why it is a wrong answer.
 */
export function judgeError(err: unknown, options: JudgeErrorOptions = {}): string | undefined {
  if (!isTroupeError(err)) {
    const e = err as { name?: unknown; message?: unknown };
    return `threw a non-Troupe error: ${String(e?.name)}: ${String(e?.message ?? err)}`;
  }
  if (options.alsoAllowed?.includes(err.code)) return undefined;
  if (err.code !== 'INVALID_ARGUMENT') return `answered ${err.code}: ${err.message}`;
  return judgeFieldMessage(err.message, namedFields(err), options.fieldPrefix);
}

/**
 * `undefined` when `message` names a field: one of `fields` (from the error's details) or, without
 * details, a leading `field:` token; with `prefixes`, the field is one of the input's.
 */
export function judgeFieldMessage(
  message: string,
  fields: readonly string[],
  prefixes?: readonly string[],
): string | undefined {
  const named =
    fields.length > 0
      ? fields.filter((f) => message.includes(f))
      : [/^`?([^\s`:]+)`?:/.exec(message)?.[1]].filter((f): f is string => f !== undefined);
  if (named.length === 0) return `INVALID_ARGUMENT names no field: ${message}`;
  if (prefixes && !named.some((f) => prefixes.some((p) => f.startsWith(p)))) {
    return `INVALID_ARGUMENT names a field outside the input (${named.join(', ')}): ${message}`;
  }
  return undefined;
}

/** Waits for `p`: its value or its error (an asynchronous call; the runner measures blocks). */
export async function settled<T>(p: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  try {
    return { value: await p };
  } catch (error) {
    return { error };
  }
}

/** Runs `fn` and measures how long it held the thread (a synchronous call). */
export function timed<T>(fn: () => T): { value?: T; error?: unknown; ms: number } {
  const t0 = performance.now();
  try {
    const value = fn();
    return { value, ms: performance.now() - t0 };
  } catch (error) {
    return { error, ms: performance.now() - t0 };
  }
}
