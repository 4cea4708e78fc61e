import type { BudgetHook } from '@troupe/llm';
import { TroupeError } from '@troupe/proto';
import { composeBudgetHooks } from '../../src/evolve';

// The islands' model calls reserve in the search's scope and in the job's: both hold the worst
// case, a refusal by either releases what the other granted, settle and release reach both.

function recordingHook(name: string, log: string[], refuse = false): BudgetHook {
  let n = 0;
  return {
    reserve: () => {
      if (refuse) throw new TroupeError('BUDGET_EXHAUSTED', `${name} has no room`);
      const id = `${name}-${++n}`;
      log.push(`reserve ${id}`);
      return { reservationId: id };
    },
    settle: (id, actual) => void log.push(`settle ${id} ${actual.usd}`),
    release: (id) => void log.push(`release ${id}`),
  };
}

const context = { requestId: 'r1', model: 'm', attempt: 1, signal: new AbortController().signal };

test('a call reserves in every hook and settles in every hook', async () => {
  const log: string[] = [];
  const hook = composeBudgetHooks([recordingHook('search', log), recordingHook('job', log)]);
  const { reservationId } = await hook.reserve({ usd: 0.5, tokens: 10 }, context);
  await hook.settle(reservationId, { usd: 0.25, tokens: 5 });
  expect(log).toEqual([
    'reserve search-1',
    'reserve job-1',
    'settle search-1 0.25',
    'settle job-1 0.25',
  ]);
});

test('a refusal by a later hook releases what earlier hooks granted and is thrown', async () => {
  const log: string[] = [];
  const hook = composeBudgetHooks([recordingHook('search', log), recordingHook('job', log, true)]);
  await expect(hook.reserve({ usd: 0.5, tokens: 10 }, context)).rejects.toMatchObject({
    code: 'BUDGET_EXHAUSTED',
  });
  expect(log).toEqual(['reserve search-1', 'release search-1']);
});
