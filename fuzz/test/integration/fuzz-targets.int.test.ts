import { runTarget } from '../../src/run-target';
import { FUZZ_TARGETS } from '../../src/targets';

// A short run of every fuzz target (npm run fuzz runs 10,000 cases each), so CI keeps the
// harness and the answers it checks honest. Event-loop blocks are bounded at 10 s here (a stall),
// not the 200 ms `npm run fuzz` holds them to: large specs still block for 0.3-5 s on a loaded
// 2-core machine, an open defect that docs/reliability.md records. A fixed seed: a failure replays with
// `npm run fuzz -- --target <name> --seed 20260423 --path <index>`.
const SEED = 20260423;
// A call unanswered for 60 s is a stall; `npm run fuzz` holds calls to 10 s. In one clean-clone CI
// run a ListJobs took over 10 s after the task-files target (not reproduced alone or on replay;
// docs/reliability.md, open defects).
process.env['TROUPE_FUZZ_CALL_DEADLINE_MS'] = '60000';
const CASES: Record<string, number> = {
  'spec-text': 60,
  'task-files': 60,
  'actor-wire': 200,
  grpc: 150,
};

test.each(FUZZ_TARGETS.map((t) => [t.name, t] as const))(
  'fuzz target %s: every answer is right',
  async (name, target) => {
    const instance = await target.start();
    try {
      const report = await runTarget(target, instance, {
        cases: CASES[name] ?? 100,
        seed: SEED,
        maxBlockMs: 10_000,
      });
      expect(report.cases).toBe(CASES[name] ?? 100);
      expect(report.examples).toEqual([]);
      expect(report.wrong).toBe(0);
    } finally {
      await instance.stop();
    }
  },
);
