import { TroupeError } from '@troupe/proto';
import { retryWhileUnavailable } from '../../src/internal/actor-support';

// A fenced sandbox reports its commands' ends as posts; a post made while the inbox's stream has
// no leader (a NATS server lost) must be made again, or the end is recorded nowhere and a retry
// runs the finished command again (chaos seed 8016).

const outage = () =>
  new TroupeError('UNAVAILABLE', 'publish to inbox: no stream answered', { retryable: true });

test('tries again after store outages until the send goes through', async () => {
  let calls = 0;
  const sent = await retryWhileUnavailable(async () => {
    if (++calls < 3) throw outage();
    return 'posted';
  }, Date.now() + 10_000);
  expect(sent).toBe('posted');
  expect(calls).toBe(3);
});

test('passes on a failure that is not an outage at once', async () => {
  let calls = 0;
  const refused = new TroupeError('INVALID_ARGUMENT', 'bad message');
  await expect(
    retryWhileUnavailable(async () => {
      calls++;
      throw refused;
    }, Date.now() + 10_000),
  ).rejects.toBe(refused);
  expect(calls).toBe(1);
});

test('gives up with the outage once no time is left for another try', async () => {
  let calls = 0;
  const started = Date.now();
  await expect(
    retryWhileUnavailable(async () => {
      calls++;
      throw outage();
    }, started + 600),
  ).rejects.toThrow('no stream answered');
  // 250 ms, then 500 ms would end past the deadline: two tries.
  expect(calls).toBe(2);
  expect(Date.now() - started).toBeLessThan(600);
});
