import { monitorEventLoopDelay } from 'node:perf_hooks';
import fc from 'fast-check';
import type { CaseVerdict, FuzzTarget, FuzzTargetInstance } from './fuzz-target';
import { MAX_BLOCK_MS } from './oracle';

/** Options of {@link runTarget}. */
export interface RunTargetOptions {
  /** Cases to run. */
  cases: number;
  /** fast-check seed: the same seed generates the same cases. */
  seed: number;
  /** fast-check replay path: run only the case at this index (as printed for a wrong answer). */
  path?: string;
  /** Called with a progress line now and then. */
  progress?: (line: string) => void;
  /** Wrong answers kept with their input (the count covers all). @default 5 */
  keepWrong?: number;
  /**
   * The longest event-loop block a case may cause. CI's short run checks the answers with a
   * stall bound instead (a 2-core shared machine makes 200 ms noise); `npm run fuzz` keeps the
   * default. @default MAX_BLOCK_MS (200)
   */
  maxBlockMs?: number;
}

/** A wrong answer, with what is needed to replay it. */
export interface WrongAnswer {
  /** 0-based case index: `--path <index>` with the same seed replays it. */
  index: number;
  reason: string;
  /** The input, rendered short. */
  input: string;
}

/** What running one target found. */
export interface TargetReport {
  target: string;
  seed: number;
  cases: number;
  wrong: number;
  /** Longest event-loop block of one case, in ms. */
  maxBlockMs: number;
  /** 99th percentile of a case's wall time (request, answer and the valid check), in ms. */
  p99CaseMs: number;
  wallMs: number;
  examples: WrongAnswer[];
}

/** Renders an input for a report: JSON with long strings and byte arrays cut. */
export function renderInput(input: unknown, maxChars = 600): string {
  const cut = (s: string) => (s.length > 200 ? `${s.slice(0, 200)}… (${s.length} chars)` : s);
  let text: string;
  try {
    // fc.stringify escapes a string one character at a time: minutes for a few MB.
    text =
      JSON.stringify(input, (_k, v: unknown) =>
        // Buffers arrive here already as {type: 'Buffer', data}: show them as text.
        typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'Buffer'
          ? cut(Buffer.from((v as { data: number[] }).data).toString('utf8'))
          : typeof v === 'string'
            ? cut(v)
            : v instanceof Uint8Array
              ? `bytes ${Buffer.from(v.subarray(0, 64)).toString('hex')} (${v.length})`
              : v,
      ) ?? String(input);
  } catch {
    text = cut(String(input));
  }
  return text.length > maxChars ? `${text.slice(0, maxChars)}… (${text.length} chars)` : text;
}

/**
 * Runs `cases` generated inputs through a started target. A case is wrong when its answer is
 * (see the target's oracle), when it holds the event loop over `maxBlockMs` (measured
 * twice: a slow case is run again, so one scheduling hiccup of a busy machine does not count),
 * when it throws out of the harness, or when a known-valid request fails after it.
 */
export async function runTarget<T>(
  target: FuzzTarget<T>,
  instance: FuzzTargetInstance<T>,
  options: RunTargetOptions,
): Promise<TargetReport> {
  const keep = options.keepWrong ?? 5;
  const limitMs = options.maxBlockMs ?? MAX_BLOCK_MS;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const examples: WrongAnswer[] = [];
  const caseMs: number[] = [];
  let wrong = 0;
  let index = options.path === undefined ? 0 : Number(options.path.split(':')[0]);
  let maxBlockMs = 0;
  const t0 = performance.now();
  let lastProgress = t0;

  /** One attempt: the verdict plus the longest block it measured. */
  const attempt = async (
    input: T,
  ): Promise<{ verdict: CaseVerdict; blockMs: number; ms: number }> => {
    loop.reset();
    const start = performance.now();
    let verdict: CaseVerdict;
    try {
      verdict = await instance.run(input);
      const broken = await instance.checkValid();
      if (broken !== undefined && verdict.wrong === undefined) {
        verdict = { ...verdict, wrong: `a valid request failed after the case: ${broken}` };
      }
    } catch (err) {
      verdict = { wrong: `the harness caught ${String((err as Error)?.stack ?? err)}` };
    }
    const ms = performance.now() - start;
    // The loop histogram records a block once a timer fires after it; a case shorter than the
    // limit cannot have blocked longer than the limit.
    const loopMs = ms > limitMs ? loop.max / 1e6 : 0;
    return { verdict, blockMs: Math.max(verdict.syncMs ?? 0, loopMs), ms };
  };

  const property = fc.asyncProperty(instance.arbitrary, async (input) => {
    const first = await attempt(input);
    const { ms } = first;
    let { verdict, blockMs } = first;
    if (blockMs > limitMs) {
      const again = await attempt(input);
      blockMs = Math.min(blockMs, again.blockMs);
      if (verdict.wrong === undefined) verdict = again.verdict;
    }
    caseMs.push(ms);
    maxBlockMs = Math.max(maxBlockMs, blockMs);
    let reason = verdict.wrong;
    if (reason === undefined && blockMs > limitMs) {
      reason = `blocked the event loop for ${Math.round(blockMs)} ms (limit ${limitMs} ms)`;
    }
    if (reason !== undefined) {
      wrong++;
      if (examples.length < keep) examples.push({ index, reason, input: renderInput(input) });
    }
    index++;
    const now = performance.now();
    if (options.progress && now - lastProgress > 5_000) {
      lastProgress = now;
      options.progress(
        `  ${target.name}: ${index}/${options.cases} cases, ${wrong} wrong, ${Math.round((now - t0) / 1000)} s`,
      );
    }
    return true;
  });
  await fc.check(property, {
    numRuns: options.path === undefined ? options.cases : 1,
    seed: options.seed,
    ...(options.path !== undefined ? { path: options.path } : {}),
    // Every case is judged and counted by the property itself; nothing to shrink.
    endOnFailure: true,
  });
  loop.disable();
  const sorted = [...caseMs].sort((a, b) => a - b);
  return {
    target: target.name,
    seed: options.seed,
    cases: caseMs.length,
    wrong,
    maxBlockMs,
    p99CaseMs: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? 0,
    wallMs: performance.now() - t0,
    examples,
  };
}
