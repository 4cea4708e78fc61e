import { runTarget } from '../../src/run-target';
import { FUZZ_TARGETS } from '../../src/targets';

// A short run of every fuzz target (npm run fuzz runs 10,000 cases each), so CI keeps the
// harness and the answers it checks honest. A fixed seed: a failure replays with
// `npm run fuzz -- --target <name> --seed 20260423 --path <index>`.
//
// Event-loop blocks are bounded at 2 s here, not the 200 ms `npm run fuzz` holds them to. Large
// documents are parsed in worker threads now, so what is left on the loop is receiving a parsed
// value and schema checks, tens of milliseconds; but CI hosts are loaded 2-core machines where a
// garbage-collection pause after a multi-MB document, or the worker threads competing with the
// test for the cores, stretch one case well past 200 ms now and then. 2 s is ten times the
// `npm run fuzz` limit and still fails for a parse on the loop (a spec near its 512 KiB limit
// held it 0.3-3 s before the fix, a multi-MB task file up to 5 s). A slow case is retried once by
// the runner and counts only when it blocks again.
const MAX_BLOCK_MS = 2_000;
const SEED = 20260423;
// A call unanswered for 60 s is a stall; `npm run fuzz` holds calls to 10 s. In one clean-clone CI
// run a ListJobs took over 10 s after the task-files target (not reproduced alone or on replay;
// docs/reliability-history.md).
process.env['TROUPE_FUZZ_CALL_DEADLINE_MS'] = '60000';
const CASES: Record<string, number> = {
  'spec-text': 60,
  'task-files': 60,
  'actor-wire': 200,
  grpc: 150,
  'tool-calls': 150,
};

test.each(FUZZ_TARGETS.map((t) => [t.name, t] as const))(
  'fuzz target %s: every answer is right',
  async (name, target) => {
    const instance = await target.start();
    try {
      const report = await runTarget(target, instance, {
        cases: CASES[name] ?? 100,
        seed: SEED,
        maxBlockMs: MAX_BLOCK_MS,
      });
      expect(report.cases).toBe(CASES[name] ?? 100);
      expect(report.examples).toEqual([]);
      expect(report.wrong).toBe(0);
    } finally {
      await instance.stop();
    }
  },
);
