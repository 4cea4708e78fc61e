import { linkSignals } from '../../src/abort';

test('aborts with the reason of the first source that aborts', () => {
  const a = new AbortController();
  const b = new AbortController();
  const linked = linkSignals([a.signal, b.signal]);
  expect(linked.signal.aborted).toBe(false);
  const reason = new Error('b went first');
  b.abort(reason);
  expect(linked.signal.aborted).toBe(true);
  expect(linked.signal.reason).toBe(reason);
  a.abort(new Error('later'));
  expect(linked.signal.reason).toBe(reason);
});

test('a source aborted already aborts it at once', () => {
  const a = new AbortController();
  a.abort('early');
  const linked = linkSignals([new AbortController().signal, a.signal]);
  expect(linked.signal.aborted).toBe(true);
  expect(linked.signal.reason).toBe('early');
});

test('after dispose no source aborts it, and no listener is left on the sources', () => {
  const a = new AbortController();
  let added = 0;
  let removed = 0;
  const add = a.signal.addEventListener.bind(a.signal);
  const remove = a.signal.removeEventListener.bind(a.signal);
  a.signal.addEventListener = (...args: Parameters<typeof add>) => {
    added++;
    add(...args);
  };
  a.signal.removeEventListener = (...args: Parameters<typeof remove>) => {
    removed++;
    remove(...args);
  };
  const linked = linkSignals([a.signal]);
  expect(added).toBe(1);
  linked.dispose();
  expect(removed).toBe(1);
  a.abort('too late');
  expect(linked.signal.aborted).toBe(false);
});
