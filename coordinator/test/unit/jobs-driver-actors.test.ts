import { defineActor } from '@troupe/actors';
import {
  DriverRegistry,
  type DriverActorRuntime,
  type JobDriver,
  JobManager,
} from '@troupe/coordinator';
import { errorCode } from '@troupe/proto';
import { z } from 'zod';

// JobDriver.actors: the kinds a driver contributes are hosted next to the job and task actors,
// bound lazily to the job runtime; a kind defined twice is refused naming both owners.

const helper = (kind: string, seen?: (rt: () => DriverActorRuntime) => void): JobDriver => ({
  name: `d-${kind}`,
  description: 'test driver',
  validate: () => undefined,
  plan: () => [],
  runTask: async () => ({}),
  grade: async () => ({ passed: true }),
  actors: (runtime) => {
    seen?.(runtime);
    return [
      defineActor({
        kind,
        state: z.object({}),
        initialState: () => ({}),
        messages: { ping: z.object({}) },
        handlers: { ping: () => ({ reply: 'pong' }) },
      }),
    ];
  },
});

test('driver actor kinds are hosted with the job and task kinds; the runtime is bound later', () => {
  let runtime: (() => DriverActorRuntime) | undefined;
  const jobs = new JobManager({
    drivers: new DriverRegistry().register(helper('helper-a', (rt) => (runtime = rt))),
  });
  expect(jobs.definitions.map((d) => d.kind)).toEqual(['job', 'job-task', 'helper-a']);
  // Before start() the runtime is not bound: UNAVAILABLE, not a crash.
  let code: string | undefined;
  try {
    runtime?.();
  } catch (err) {
    code = errorCode(err);
  }
  expect(code).toBe('UNAVAILABLE');
});

function constructionError(drivers: DriverRegistry): unknown {
  try {
    new JobManager({ drivers });
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}

test('a kind the job layer defines is refused with ALREADY_EXISTS', () => {
  const err = constructionError(new DriverRegistry().register(helper('job-task')));
  expect(errorCode(err)).toBe('ALREADY_EXISTS');
  expect((err as Error).message).toMatch(
    /driver 'd-job-task' defines actor kind 'job-task', which the job layer already defines/,
  );
});

test('a kind another driver defines is refused with ALREADY_EXISTS naming both', () => {
  const drivers = new DriverRegistry()
    .register(helper('helper-a'))
    .register({ ...helper('helper-a'), name: 'd-helper-b' });
  const err = constructionError(drivers);
  expect(errorCode(err)).toBe('ALREADY_EXISTS');
  expect((err as Error).message).toMatch(
    /driver 'd-helper-b' defines actor kind 'helper-a', which driver 'd-helper-a' already defines/,
  );
});
