import { EventEmitter } from 'node:events';
import { waitForEvent, WaitTimeoutError } from '@troupe/testkit';

describe('waitForEvent', () => {
  it('resolves with the arguments of the first emission that passes the filter', async () => {
    const emitter = new EventEmitter();
    const pending = waitForEvent<[string, number]>(emitter, 'job', {
      timeoutMs: 5_000,
      filter: (_name, attempt) => attempt >= 2,
    });
    emitter.emit('job', 'a', 1);
    emitter.emit('job', 'b', 2);
    emitter.emit('job', 'c', 3);
    await expect(pending).resolves.toEqual(['b', 2]);
    expect(emitter.listenerCount('job')).toBe(0);
    expect(emitter.listenerCount('error')).toBe(0);
  });

  it('rejects when the emitter emits error', async () => {
    const emitter = new EventEmitter();
    const pending = waitForEvent(emitter, 'ready', { timeoutMs: 5_000 });
    emitter.emit('error', new Error('boom'));
    await expect(pending).rejects.toThrow('boom');
    expect(emitter.listenerCount('ready')).toBe(0);
  });

  it('times out with a stack naming the waiter and removes its listeners', async () => {
    const emitter = new EventEmitter();
    const waitForReady = (): Promise<unknown> =>
      waitForEvent(emitter, 'ready', { timeoutMs: 10, message: 'agent ready' });
    const err = await waitForReady().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WaitTimeoutError);
    expect((err as Error).message).toBe('agent ready not emitted within 10 ms');
    expect((err as Error).stack).toContain('waitForReady');
    expect(emitter.listenerCount('ready')).toBe(0);
  });

  it('rejects with the abort reason', async () => {
    const emitter = new EventEmitter();
    const controller = new AbortController();
    const pending = waitForEvent(emitter, 'ready', {
      timeoutMs: 60_000,
      signal: controller.signal,
    });
    controller.abort(new Error('user cancelled'));
    await expect(pending).rejects.toThrow('user cancelled');
    expect(emitter.listenerCount('ready')).toBe(0);
  });
});
