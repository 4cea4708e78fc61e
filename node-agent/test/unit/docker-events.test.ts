import { PassThrough } from 'node:stream';
import type Docker from 'dockerode';
import { waitFor } from '@troupe/testkit';
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

  test('an event split across chunks is put together; a repeat is dropped, an older event is not', async () => {
    const { docker, stream } = fakeDocker();
    const got: string[] = [];
    const stop = await followDockerEvents(docker, { events: ['exec_die'], labels: [] }, (e) =>
      got.push(e.Actor?.ID ?? '?'),
    );
    const d = event('d', 5);
    stream.write(d.slice(0, 10));
    // `e` was published after `d` with an earlier time (the engine's goroutines race): before,
    // it was dropped for its time (chaos seeds 46102, 46205).
    stream.write(d.slice(10) + d + event('e', 4) + event('f', 6));
    await new Promise((r) => setImmediate(r));
    expect(got).toEqual(['d', 'e', 'f']);
    stop();
  });

  test('a stream that ends is followed again from a second before the latest event, without repeats', async () => {
    const streams = [new PassThrough(), new PassThrough()];
    const asked: { since?: string }[] = [];
    const docker = {
      getEvents: async (options: { since?: string }) => {
        asked.push(options);
        const next = streams[asked.length - 1];
        if (!next) throw new Error('no more streams');
        return next;
      },
    } as unknown as Docker;
    const got: string[] = [];
    const stop = await followDockerEvents(docker, { events: ['exec_die'], labels: [] }, (e) =>
      got.push(e.Actor?.ID ?? '?'),
    );
    const t = 1_765_000_005_250_000_000;
    const a = event('a', t - 1_500_000_000);
    const b = event('b', t);
    streams[0]!.write(a + b);
    streams[0]!.end();
    await waitFor(() => asked.length === 2, { timeoutMs: 5_000, message: 'followed again' });
    expect(asked[0]?.since).toBeUndefined();
    expect(asked[1]?.since).toBe('1765000004.250000000');
    // The replay repeats `b`, and brings `c`, published late with an earlier time.
    streams[1]!.write(b + event('c', t - 500_000_000) + event('d', t + 1));
    await new Promise((r) => setImmediate(r));
    expect(got).toEqual(['a', 'b', 'c', 'd']);
    stop();
  });
});
