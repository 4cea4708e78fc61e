import { TroupeError } from '@troupe/proto';
import { type JournalRecord } from './journal-record';
import { applyJournalRecord, createSearchState, type SearchState } from './search-state';

/**
 * Rebuilds a search's state from its journal (pure): the task record first, then every record
 * folded with {@link applyJournalRecord}. This is how a search resumes after a crash: islands,
 * generation counter, budgets, attempts started (and lost) all come back; nothing else is stored.
 * @throws TroupeError `INVALID_ARGUMENT` when the journal does not start with a task record
 */
export function replayJournal(records: readonly JournalRecord[]): SearchState {
  const [first, ...rest] = records;
  if (!first || first.type !== 'task') {
    throw new TroupeError('INVALID_ARGUMENT', 'an evolve journal must start with its task record');
  }
  const state = createSearchState(first);
  for (const record of rest) applyJournalRecord(state, record);
  return state;
}
