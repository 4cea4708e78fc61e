import { nextDebugStep } from '../../src/debug-chain';

const limits = { maxDepth: 2, maxTimeMs: 1_000 };
const base = {
  canDebug: true,
  depth: 0,
  elapsedMs: 0,
  lastOutcome: 'buggy' as const,
  attemptsLeft: 5,
};

describe('nextDebugStep', () => {
  it('continues a buggy chain while depth, time and budget allow', () => {
    expect(nextDebugStep(base, limits)).toBe('continue');
    expect(nextDebugStep({ ...base, depth: 1, elapsedMs: 999 }, limits)).toBe('continue');
  });

  it('stops at the depth bound, the time bound and the slot budget', () => {
    expect(nextDebugStep({ ...base, depth: 2 }, limits)).toBe('max_depth');
    expect(nextDebugStep({ ...base, depth: 1, elapsedMs: 1_000 }, limits)).toBe('max_time');
    expect(nextDebugStep({ ...base, attemptsLeft: 0 }, limits)).toBe('budget');
  });

  it('ends on a fix, on infrastructure failures and operator failures, and without LLM ops', () => {
    expect(nextDebugStep({ ...base, lastOutcome: 'scored' }, limits)).toBe('fixed');
    expect(nextDebugStep({ ...base, lastOutcome: 'unscored' }, limits)).toBe('not_debuggable');
    expect(nextDebugStep({ ...base, lastOutcome: 'no_code' }, limits)).toBe('not_debuggable');
    expect(nextDebugStep({ ...base, canDebug: false }, limits)).toBe('builtin_operators');
  });
});
