import { TroupeError, invalidArgument } from '@troupe/proto';
import { type Program } from './program';
import {
  type OperatorContext,
  type OperatorParent,
  type Proposal,
  type SearchOperators,
} from './search-operators';
import { type SeededRng } from './seeded-rng';
import { parseTunableParams, rewriteTunableParams, type TunableParam } from './tunable-params';

/** What a caller passes to {@link BuiltinOperators}. */
export interface BuiltinOperatorsOptions {
  /**
   * Improve: standard deviation of the gaussian step as a fraction of each parameter's range
   * (of its log range for `log` parameters).
   * @default 0.1
   */
  mutationSigma?: number;
  /**
   * Improve: at most this many parameters change per child (at least one; uniformly chosen).
   * @default 2
   */
  maxMutatedParams?: number;
}

/**
 * Operators that need no model. They work on the `troupe:param` markers of a program (see
 * {@link parseTunableParams}) and are deterministic given the context's seeded generator:
 * - Draft: a seed program (chosen at random when there are several) with every parameter
 *   redrawn uniformly in its range (log-uniformly for `log`);
 * - Improve: gaussian perturbation of one to `maxMutatedParams` parameters, scaled to each
 *   range (times the context's `stepScale`) and clamped into it (integers rounded, and always
 *   moved);
 * - Crossover: uniform crossover — each parameter both parents mark comes from either with
 *   probability ½; the text is the first parent's;
 * - Debug: not available (`canDebug` is false): a built-in child is a parameter setting, and
 *   the search records a buggy one without a repair chain.
 */
export class BuiltinOperators implements SearchOperators {
  readonly canDebug = false;
  private readonly sigma: number;
  private readonly maxMutated: number;

  constructor(options: BuiltinOperatorsOptions = {}) {
    this.sigma = options.mutationSigma ?? 0.1;
    this.maxMutated = options.maxMutatedParams ?? 2;
    if (!(this.sigma > 0)) throw invalidArgument('mutationSigma', 'must be > 0', this.sigma);
    if (!(Number.isInteger(this.maxMutated) && this.maxMutated >= 1)) {
      throw invalidArgument('maxMutatedParams', 'must be an integer ≥ 1', this.maxMutated);
    }
  }

  async draft(ctx: OperatorContext): Promise<Proposal> {
    const seed = ctx.rng.pick(nonEmpty(ctx.seeds));
    const params = paramsOf(seed, 'seed program');
    const values: Record<string, number> = {};
    for (const p of params) values[p.name] = drawUniform(p, ctx.rng);
    return proposal(seed, values);
  }

  async improve(parent: OperatorParent, ctx: OperatorContext): Promise<Proposal> {
    const params = paramsOf(parent.program, `parent ${parent.nodeId}`);
    const count = ctx.rng.int(1, Math.min(this.maxMutated, params.length));
    const chosen = sample(params, count, ctx.rng);
    const values: Record<string, number> = {};
    const sigma = this.sigma * ctx.stepScale;
    for (const p of chosen) values[p.name] = perturb(p, sigma, ctx.rng);
    return proposal(parent.program, values);
  }

  async crossover(a: OperatorParent, b: OperatorParent, ctx: OperatorContext): Promise<Proposal> {
    paramsOf(a.program, `parent ${a.nodeId}`);
    const fromB = new Map(parseTunableParams(b.program.source).map((p) => [p.name, p]));
    const values: Record<string, number> = {};
    for (const p of parseTunableParams(a.program.source)) {
      const other = fromB.get(p.name);
      // Draw for every parameter of A, so the draws do not depend on which names B shares.
      const takeB = ctx.rng.next() < 0.5;
      if (other && takeB) values[p.name] = finish(p, other.value);
    }
    return proposal(a.program, values);
  }

  async debug(buggy: OperatorParent): Promise<Proposal> {
    throw new TroupeError(
      'INVALID_ARGUMENT',
      `built-in operators cannot debug (node ${buggy.nodeId}); use LLM operators for Debug chains`,
    );
  }
}

function nonEmpty<T>(items: readonly T[]): readonly T[] {
  if (items.length === 0) throw invalidArgument('seeds', 'Draft needs at least one seed program');
  return items;
}

function paramsOf(program: Program, what: string): TunableParam[] {
  const params = parseTunableParams(program.source);
  if (params.length === 0) {
    throw invalidArgument(what, 'built-in operators need `troupe:param` markers in the program');
  }
  return params;
}

function proposal(base: Program, values: Record<string, number>): Proposal {
  return {
    program: { language: base.language, source: rewriteTunableParams(base.source, values) },
    costUsd: 0,
  };
}

function finish(p: TunableParam, value: number): number {
  const clamped = Math.min(p.max, Math.max(p.min, value));
  return p.type === 'int' ? Math.round(clamped) : clamped;
}

function drawUniform(p: TunableParam, rng: SeededRng): number {
  if (p.type === 'int') return rng.int(p.min, p.max);
  if (p.log) return Math.exp(rng.uniform(Math.log(p.min), Math.log(p.max)));
  return finish(p, rng.uniform(p.min, p.max));
}

function perturb(p: TunableParam, sigma: number, rng: SeededRng): number {
  if (p.log) {
    const lo = Math.log(p.min);
    const hi = Math.log(p.max);
    return finish(p, Math.exp(Math.log(p.value) + rng.normal() * sigma * (hi - lo)));
  }
  let next = finish(p, p.value + rng.normal() * sigma * (p.max - p.min));
  // An integer step that rounds back to the same value would waste the evaluation.
  if (p.type === 'int' && next === p.value) {
    const step = rng.next() < 0.5 ? -1 : 1;
    next = finish(p, p.value + step) === p.value ? finish(p, p.value - step) : p.value + step;
  }
  return next;
}

function sample<T>(items: readonly T[], count: number, rng: SeededRng): T[] {
  const pool = [...items];
  const out: T[] = [];
  while (out.length < count && pool.length > 0) {
    out.push(pool.splice(rng.int(0, pool.length - 1), 1)[0] as T);
  }
  return out;
}
