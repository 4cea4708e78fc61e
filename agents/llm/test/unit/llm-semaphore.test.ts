import { Semaphore } from '../../src/internal/semaphore';

describe('Semaphore', () => {
  it('hands released slots to waiters in FIFO order', async () => {
    const sem = new Semaphore(1);
    const never = new AbortController().signal;
    const first = await sem.acquire(never);
    const order: string[] = [];
    const b = sem.acquire(never).then((release) => {
      order.push('b');
      return release;
    });
    const c = sem.acquire(never).then((release) => {
      order.push('c');
      return release;
    });
    expect(sem.queued).toBe(2);
    first();
    first(); // idempotent: must not free a second slot
    (await b)();
    (await c)();
    expect(order).toEqual(['b', 'c']);
    expect(sem.inUse).toBe(0);
  });

  it('drops an aborted waiter without taking a slot', async () => {
    const sem = new Semaphore(1);
    const release = await sem.acquire(new AbortController().signal);
    const controller = new AbortController();
    const waiting = sem.acquire(controller.signal);
    controller.abort();
    await expect(waiting).rejects.toMatchObject({ code: 'CANCELLED' });
    expect(sem.queued).toBe(0);
    release();
    expect(sem.inUse).toBe(0);
  });
});
