import {
  clip,
  type Phase2Log,
  type RsiBank,
  type ShellPublication,
  type TargetResult,
} from '@troupe/rsi';

/** A publication's name in the records: its root, or what was wrong with it. */
function projectName(p: ShellPublication): string {
  if ('malformed' in p) return `(malformed: ${clip(p.malformed, 120)})`;
  return p.root?.trim() || '(no root)';
}

/**
 * A development target's attempts and practice projects as its Phase-2 record keeps them (the
 * report's per-cycle view): verdicts, the Verifier reports clipped, bank hashes before and after
 * learning, and why lessons were refused.
 */
export function targetLog(result: TargetResult<RsiBank, ShellPublication>): Phase2Log {
  return {
    attempts: result.attempts.map((a) => ({
      attempt: a.attempt,
      final: a.final,
      verdict: a.verdict,
      report: clip(a.report),
      bankBefore: a.bankBefore,
      bankAfter: a.bankAfter,
      ...(a.learningRefused !== undefined ? { learningRefused: clip(a.learningRefused) } : {}),
    })),
    projects: result.projects.map((p) => ({
      index: p.index,
      ...(p.attempt !== undefined ? { attempt: p.attempt } : {}),
      project: projectName(p.publication),
      verdict: p.verdict,
      report: clip(p.report),
      bankBefore: p.bankBefore,
      bankAfter: p.bankAfter,
      ...(p.learningRefused !== undefined ? { learningRefused: clip(p.learningRefused) } : {}),
    })),
  };
}
