import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { ImageManager } from '@troupe/node-agent';
import { errorCode } from '@troupe/proto';
import Docker from 'dockerode';
import { EnvironmentBuilder } from '../../src/issue-resolution/environment-builder';
import { TaskEnvironmentSchema } from '../../src/issue-resolution/task-environment';

// Task environments against the real Docker engine: set-up steps run once, with the network, into
// a cached image; a second ensure is a cache hit; a failing step is reported by index and command.

jest.setTimeout(900_000);

const docker = new Docker();
const builder = new EnvironmentBuilder({ docker, images: new ImageManager({ docker }) });
const made: string[] = [];

afterAll(async () => {
  for (const ref of made)
    await docker
      .getImage(ref)
      .remove({ force: true })
      .catch(() => undefined);
});

/** Runs `cmd` in a fresh container of `image` as the image's user; returns stdout. */
async function runIn(image: string, cmd: string): Promise<string> {
  const out = new PassThrough();
  let text = '';
  out.on('data', (b: Buffer) => (text += b.toString('utf8')));
  // Two streams: dockerode demultiplexes stdout and stderr (one stream would get the raw frames).
  const [result] = (await docker.run(image, ['sh', '-c', cmd], [out, out], {
    Tty: false,
    HostConfig: { AutoRemove: true, NetworkMode: 'none' },
  })) as [{ StatusCode: number }];
  expect(result.StatusCode).toBe(0);
  return text;
}

test('an environment is built once with its set-up steps, then reused from the cache', async () => {
  const token = randomBytes(6).toString('hex');
  const env = TaskEnvironmentSchema.parse({
    base: 'base',
    run: [`echo ${token} > /opt/marker`, 'mkdir -p /opt/tools && echo ok > /opt/tools/ready'],
  });
  const first = await builder.ensure(env, '/testbed');
  made.push(first.ref);
  expect(first.built).toBe(true);
  expect(first.ref).toMatch(/^troupe-env:[0-9a-f]{12}$/);

  const second = await builder.ensure(env, '/testbed');
  expect(second).toMatchObject({ ref: first.ref, built: false });
  // A cache hit only inspects images: far below any build (which runs apt-get).
  expect(second.ms).toBeLessThan(first.ms / 5);

  const seen = await runIn(
    first.ref,
    'id -u; pwd; cat /opt/marker /opt/tools/ready; git --version; patch --version | head -1; stat -c %u /testbed',
  );
  const lines = seen.trim().split('\n');
  expect(lines[0]).toBe('1000');
  expect(lines[1]).toBe('/testbed');
  expect(lines[2]).toBe(token);
  expect(lines[3]).toBe('ok');
  expect(lines[4]).toMatch(/^git version /);
  expect(lines[5]).toMatch(/patch/i);
  expect(lines[6]).toBe('1000');
});

test('a failing set-up step fails the build naming its index, command and output', async () => {
  const token = randomBytes(6).toString('hex');
  const env = TaskEnvironmentSchema.parse({
    base: 'base',
    run: [`echo ${token}`, `echo "no such package ${token}" >&2; exit 3`],
  });
  const err = await builder.ensure(env, '/workspace').then(
    () => undefined,
    (e: unknown) => e as Error & { details?: Record<string, unknown> },
  );
  expect(err).toBeDefined();
  expect(errorCode(err)).toBe('INVALID_ARGUMENT');
  expect(err!.message).toContain(`set-up step 3 (echo "no such package ${token}" >&2; exit 3)`);
  expect(err!.message).toContain('exit 3');
  expect(err!.message).toContain(`no such package ${token}`);
  expect(err!.details?.['step']).toMatchObject({ index: 3, exitCode: 3 });
  // Nothing is cached for a failed recipe, and no build container is left behind.
  const left = await docker.listContainers({
    all: true,
    filters: { label: ['troupe.environment-build'] },
  });
  expect(left.filter((c) => c.Image.startsWith('troupe-base'))).toEqual([]);
});
