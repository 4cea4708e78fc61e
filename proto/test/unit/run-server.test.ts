import { z } from 'zod';
import { type ApplyEnvironment, runServer, serverConfigProblems } from '@troupe/proto';

const Schema = z.object({ port: z.int().min(0).default(1) }).strict();
const applyEnvironment: ApplyEnvironment = (raw) => ({ config: raw, issues: [] });
const log = { info: () => undefined, error: () => undefined };

describe('runServer', () => {
  test('config, logger, start, started, then on abort: stopping (with the reason) and stop', async () => {
    const steps: string[] = [];
    const stop = new AbortController();
    const done = runServer({
      config: { env: {}, schema: Schema, applyEnvironment },
      logger: (config) => (steps.push(`logger ${config.port}`), log),
      start: (config) => {
        steps.push(`start ${config.port}`);
        return Promise.resolve({ stop: () => (steps.push('stop'), Promise.resolve()) });
      },
      signal: stop.signal,
      onStarted: () => steps.push('started'),
      onStopping: (reason) => steps.push(`stopping ${String(reason)}`),
    });
    await new Promise((r) => setImmediate(r));
    expect(steps).toEqual(['logger 1', 'start 1', 'started']);
    stop.abort('SIGTERM');
    await done;
    expect(steps).toEqual(['logger 1', 'start 1', 'started', 'stopping SIGTERM', 'stop']);
  });

  test('a signal aborted before the start stops the server as soon as it has started', async () => {
    const steps: string[] = [];
    await runServer({
      config: { env: {}, schema: Schema, applyEnvironment },
      logger: () => log,
      start: () => Promise.resolve({ stop: () => (steps.push('stop'), Promise.resolve()) }),
      signal: AbortSignal.abort('shutdown'),
      onStarted: () => steps.push('started'),
    });
    expect(steps).toEqual(['started', 'stop']);
  });

  test('an uncaught error is logged with its origin while the server runs, not after', async () => {
    const errors: unknown[][] = [];
    const logger = { info: () => undefined, error: (...args: unknown[]) => errors.push(args) };
    const listeners = process.listenerCount('uncaughtExceptionMonitor');
    const stop = new AbortController();
    const done = runServer({
      config: { env: {}, schema: Schema, applyEnvironment },
      logger: () => logger,
      start: () => Promise.resolve({ stop: () => Promise.resolve() }),
      signal: stop.signal,
    });
    await new Promise((r) => setImmediate(r));
    const boom = new Error('boom');
    for (const listener of process.listeners('uncaughtExceptionMonitor')) {
      listener(boom, 'unhandledRejection');
    }
    expect(errors).toEqual([
      [{ err: boom, origin: 'unhandledRejection' }, 'exiting on an uncaught error'],
    ]);
    stop.abort('SIGTERM');
    await done;
    expect(process.listenerCount('uncaughtExceptionMonitor')).toBe(listeners);
  });

  test('a bad config is refused with every problem before the logger or the server exist', async () => {
    const start = jest.fn();
    const logger = jest.fn();
    const err: unknown = await runServer({
      config: { env: {}, schema: Schema, applyEnvironment, defaults: () => ({ port: -1, x: 1 }) },
      logger,
      start,
      signal: new AbortController().signal,
    }).catch((e: unknown) => e);
    expect(serverConfigProblems(err)).toEqual([
      'config.port: Too small: expected number to be >=0',
      'config.x: unknown field',
    ]);
    expect(logger).not.toHaveBeenCalled();
    expect(start).not.toHaveBeenCalled();
  });
});
