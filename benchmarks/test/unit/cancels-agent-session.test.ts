import { cancelledError, CancelReason, TroupeError, timeoutError } from '@troupe/proto';
import { cancelsAgentSession } from '../../src/issue-resolution';

// Which aborts of a model agent's run context cancel its agent session.

test('a user cancel and a timeout cancel the session; shutdown and fencing do not', () => {
  expect(cancelsAgentSession(cancelledError(CancelReason.USER))).toBe(true);
  expect(cancelsAgentSession(timeoutError('agent of task t', 1_000))).toBe(true);
  expect(cancelsAgentSession(cancelledError(CancelReason.SHUTDOWN))).toBe(false);
  // The actor runtime's fencing abort: CANCELLED without a user reason.
  expect(cancelsAgentSession(new TroupeError('CANCELLED', 'task/x was fenced'))).toBe(false);
  expect(cancelsAgentSession(new Error('boom'))).toBe(false);
  expect(cancelsAgentSession(undefined)).toBe(false);
});
