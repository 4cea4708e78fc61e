import type { BudgetHook } from '@troupe/llm';

/**
 * One budget hook made of several: a call reserves its worst case in each, in order (a refusal
 * releases what the earlier ones granted and is thrown), then settles or releases in all. The
 * `evolve` islands' model calls reserve in the search's scope and in the job's.
 */
export function composeBudgetHooks(hooks: readonly BudgetHook[]): BudgetHook {
  return {
    async reserve(amount, context) {
      const ids: string[] = [];
      try {
        for (const hook of hooks) ids.push((await hook.reserve(amount, context)).reservationId);
      } catch (err) {
        await Promise.all(
          ids.map((id, i) => Promise.resolve(hooks[i]?.release(id)).catch(() => undefined)),
        );
        throw err;
      }
      return { reservationId: JSON.stringify(ids) };
    },
    async settle(reservationId, actual) {
      const ids = JSON.parse(reservationId) as string[];
      await Promise.all(ids.map((id, i) => Promise.resolve(hooks[i]?.settle(id, actual))));
    },
    async release(reservationId) {
      const ids = JSON.parse(reservationId) as string[];
      await Promise.all(ids.map((id, i) => Promise.resolve(hooks[i]?.release(id))));
    },
  };
}
