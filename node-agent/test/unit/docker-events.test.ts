import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import { followDockerEvents, type DockerEvent } from '../../src/docker-events';

/**
 * The parsing side of `followDockerEvents`, on a stream the test writes: a daemon cannot be made
 * to send a line that is not JSON. Following through a real daemon restart is proved in
 * test-cluster's `follow-container-events.int.test.ts`.
 */
function fakeDocker(): { docker: Docker; stream: PassThrough } {
  const stream = new PassThrough();
  const docker = { getEvents: async () => stream } as unknown as Docker;
  return { docker, stream };
}

const event = (id: string, timeNano: number): string =>
  JSON.stringify({ Action: 'exec_die', Actor: { ID: id }, timeNano }) + '\n';

describe('followDockerEvents', () => {
  test('a line that is not JSON is reported and skipped; the events after it still come', async () => {
    const { docker, stream } = fakeDocker();
    const got: string[] = [];
    const bad: string[] = [];
    const stop = await followDockerEvents(
      docker,
      { events: ['exec_die'], labels: [] },
      (e: DockerEvent) => got.push(e.Actor?.ID ?? '?'),
      (err, line) => bad.push(`${(err as Error).name}: ${line}`),
    );
    stream.write(event('a', 1));
    stream.write('{"Action": "exec_die", "timeNano": 2, truncated\n');
    stream.write(event('b', 3));
    await new Promise((r) => setImmediate(r));
    expect(got).toEqual(['a', 'b']);
    expect(bad).toHaveLength(1);
    expect(bad[0]).toMatch(/^SyntaxError: .*truncated/);
    stop();
  });

  test('an onEvent that throws costs its own event only, never the process', async () => {
    const { docker, stream } = fakeDocker();
    const got: string[] = [];
    const bad: unknown[] = [];
    const stop = await followDockerEvents(
      docker,
      { events: ['exec_die'], labels: [] },
      (e) => {
        if (e.Actor?.ID === 'boom') throw new Error('handler failed');
        got.push(e.Actor?.ID ?? '?');
      },
      (err) => bad.push(err),
    );
    stream.write(event('boom', 1) + event('c', 2));
    await new Promise((r) => setImmediate(r));
    expect(got).toEqual(['c']);
    expect(bad).toEqual([new Error('handler failed')]);
    stop();
  });

  test('an event split across chunks is put together; one repeated at the last instant is dropped', async () => {
    const { docker, stream } = fakeDocker();
    const got: string[] = [];
    const stop = await followDockerEvents(docker, { events: ['exec_die'], labels: [] }, (e) =>
      got.push(e.Actor?.ID ?? '?'),
    );
    const d = event('d', 5);
    stream.write(d.slice(0, 10));
    stream.write(d.slice(10) + d + event('e', 4) + event('f', 6));
    await new Promise((r) => setImmediate(r));
    expect(got).toEqual(['d', 'f']);
    stop();
  });
});
