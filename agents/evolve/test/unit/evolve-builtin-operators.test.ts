import { BuiltinOperators } from '../../src/builtin-operators';
import { type OperatorContext } from '../../src/search-operators';
import { SeededRng } from '../../src/seeded-rng';
import { parseTunableParams } from '../../src/tunable-params';

const SEED = {
  language: 'python',
  source: [
    'A = 0.0  # troupe:param float[-1,1]',
    'B = 5  # troupe:param int[0,10]',
    'C = 1.0  # troupe:param float[0.001,1000] log',
    'D = 0.5  # troupe:param float[0,1]',
    'print(A, B, C, D)',
    '',
  ].join('\n'),
};

function ctx(key: string, seeds = [SEED], stepScale = 1): OperatorContext {
  return {
    rng: SeededRng.fromKey(key),
    signal: new AbortController().signal,
    seeds,
    generation: 1,
    stepScale,
  };
}
const values = (source: string): Record<string, number> =>
  Object.fromEntries(parseTunableParams(source).map((p) => [p.name, p.value]));
const parent = (source: string, nodeId = 'p') => ({
  nodeId,
  program: { language: 'python', source },
  result: null,
});

describe('BuiltinOperators', () => {
  const ops = new BuiltinOperators({ mutationSigma: 0.1, maxMutatedParams: 2 });

  it('is deterministic given the generator', async () => {
    for (const op of [
      (k: string) => ops.draft(ctx(k)),
      (k: string) => ops.improve(parent(SEED.source), ctx(k)),
    ]) {
      const a = await op('same');
      const b = await op('same');
      const c = await op('other');
      expect(a).toEqual(b);
      expect(a.program.source).not.toBe(c.program.source);
      expect(a.costUsd).toBe(0);
    }
  });

  it('Draft redraws every parameter within its range and keeps the rest of the text', async () => {
    const seen: Record<string, number>[] = [];
    for (let i = 0; i < 50; i++) {
      const p = await ops.draft(ctx(`d${i}`));
      const v = values(p.program.source);
      expect(v.A).toBeGreaterThanOrEqual(-1);
      expect(v.A).toBeLessThanOrEqual(1);
      expect(Number.isInteger(v.B)).toBe(true);
      expect(v.C).toBeGreaterThanOrEqual(0.001);
      expect(v.C).toBeLessThanOrEqual(1000);
      expect(p.program.source.split('\n')[4]).toBe('print(A, B, C, D)');
      seen.push(v);
    }
    // Log-uniform: about half the draws of C fall below the geometric middle (1).
    const below = seen.filter((v) => (v.C as number) < 1).length;
    expect(below).toBeGreaterThan(10);
    expect(below).toBeLessThan(40);
  });

  it('Improve changes one or two parameters by a step scaled to the range, clamped', async () => {
    const base = values(SEED.source);
    let total = 0;
    for (let i = 0; i < 60; i++) {
      const v = values((await ops.improve(parent(SEED.source), ctx(`i${i}`))).program.source);
      const changed = Object.keys(base).filter((k) => v[k] !== base[k]);
      expect(changed.length).toBeGreaterThanOrEqual(1);
      expect(changed.length).toBeLessThanOrEqual(2);
      if (v.A !== base.A) total += Math.abs((v.A as number) - (base.A as number));
      expect(v.D).toBeGreaterThanOrEqual(0);
      expect(v.D).toBeLessThanOrEqual(1);
    }
    // sigma 0.1 of a range of 2: steps of about 0.2, never the whole range.
    expect(total).toBeGreaterThan(0);
  });

  it('Improve scales its step by the context step scale (same draws, a quarter the step)', async () => {
    // Floats only: an int step that rounds back to the same value takes an extra draw.
    const floats = {
      language: 'python',
      source: 'A = 0.0  # troupe:param float[-1,1]\nD = 0.5  # troupe:param float[0,1]\n',
    };
    let compared = 0;
    for (let i = 0; i < 30; i++) {
      const full = values((await ops.improve(parent(floats.source), ctx(`s${i}`))).program.source);
      const quarter = values(
        (await ops.improve(parent(floats.source), ctx(`s${i}`, [floats], 0.25))).program.source,
      );
      // A step that was not clamped scales, up to the rounding of the rewritten text.
      if (full.A !== 0 && Math.abs(full.A as number) < 1) {
        expect(quarter.A as number).toBeCloseTo((full.A as number) / 4, 9);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(5);
  });

  it('Improve always moves an int parameter (a step that rounds back is pushed by one)', async () => {
    const only = { language: 'python', source: 'K = 10  # troupe:param int[0,10]\n' };
    for (let i = 0; i < 20; i++) {
      const v = values((await ops.improve(parent(only.source), ctx(`k${i}`))).program.source);
      expect(v.K).not.toBe(10);
      expect(v.K).toBeGreaterThanOrEqual(0);
    }
  });

  it('Crossover takes each shared parameter from either parent, text from the first', async () => {
    const a = parent(SEED.source, 'a');
    const bSource = SEED.source
      .replace('A = 0.0', 'A = 1.0')
      .replace('B = 5', 'B = 9')
      .replace('D = 0.5', 'D = 0.25')
      .replace('print(A, B, C, D)', 'print("b")');
    const b = parent(bSource, 'b');
    let fromB = 0;
    for (let i = 0; i < 40; i++) {
      const child = await ops.crossover(a, b, ctx(`x${i}`));
      const v = values(child.program.source);
      expect([0, 1]).toContain(v.A);
      expect([5, 9]).toContain(v.B);
      expect(child.program.source).toContain('print(A, B, C, D)');
      if (v.A === 1) fromB++;
    }
    expect(fromB).toBeGreaterThan(5);
    expect(fromB).toBeLessThan(35);
  });

  it('refuses programs without markers and cannot debug', async () => {
    await expect(ops.improve(parent('x = 1\n'), ctx('n'))).rejects.toThrow('troupe:param');
    await expect(ops.draft(ctx('n', []))).rejects.toThrow('seed');
    await expect(ops.debug(parent(SEED.source))).rejects.toThrow('cannot debug');
    expect(ops.canDebug).toBe(false);
  });
});
