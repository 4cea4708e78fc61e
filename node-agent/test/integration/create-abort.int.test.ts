import type Docker from 'dockerode';
import { DockerSandboxBackend } from '@troupe/node-agent';
import { waitFor } from '@troupe/testkit';
import { dockerFixture, leftovers, type DockerFixture } from './helpers';

// A sandbox's creation aborted while Docker is still creating its container (the activation was
// fenced, chaos seed 8225): Docker goes on with a create whose client has gone, and the
// container it makes after the backend's cleanup stayed until the reaper's next sweep, 90 s
// later. Here the engine is a real one behind a wrapper that takes 2 s to create a container,
// and that, like Docker, answers an aborted request at once but creates the container anyway.

/**
 * How long the wrapped engine takes to create a container: far longer than the abort (150 ms)
 * plus a loaded machine's delays (a 400 ms engine left 250 ms of margin, and a CI run took 477 ms
 * to see the rejection), so a wait that ends with the engine cannot pass for one that ends
 * with the abort.
 */
const ENGINE_CREATE_MS = 2_000;

let fx: DockerFixture;
beforeAll(async () => {
  fx = await dockerFixture();
});

/** `docker` whose container creates take 2 s and carry on after their request is aborted. */
function slowEngine(docker: Docker): { docker: Docker; created: () => number } {
  let created = 0;
  const createContainer = (
    options: Docker.ContainerCreateOptions & { abortSignal?: AbortSignal },
  ) => {
    const { abortSignal, ...rest } = options;
    const made = new Promise<Docker.Container>((resolve, reject) => {
      setTimeout(() => {
        docker.createContainer(rest).then((c) => {
          created++;
          resolve(c);
        }, reject);
      }, ENGINE_CREATE_MS);
    });
    if (!abortSignal) return made;
    return new Promise<Docker.Container>((resolve, reject) => {
      abortSignal.addEventListener(
        'abort',
        () => reject(Object.assign(new Error('The operation was aborted'), { name: 'AbortError' })),
        { once: true },
      );
      made.then(resolve, reject);
    });
  };
  const wrapped = new Proxy(docker, {
    get(target, key, receiver) {
      if (key === 'createContainer') return createContainer;
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function'
        ? (value as (...a: unknown[]) => unknown).bind(target)
        : value;
    },
  });
  return { docker: wrapped, created: () => created };
}

test('a create aborted while the engine makes the container leaves no container or volume', async () => {
  const engine = slowEngine(fx.docker);
  const backend = new DockerSandboxBackend({ docker: engine.docker });
  const abort = new AbortController();
  setTimeout(() => abort.abort(), 150);
  const started = Date.now();
  await expect(backend.create(fx.spec(), { signal: abort.signal })).rejects.toThrow(
    /abort|cancel/i,
  );
  // The wait ended with the abort, not with the engine.
  expect(Date.now() - started).toBeLessThan(ENGINE_CREATE_MS * 0.75);
  await waitFor(() => engine.created() === 1, {
    timeoutMs: 10_000,
    message: 'the engine finished creating the container',
  });
  await waitFor(
    async () => {
      const left = await leftovers(fx.docker, fx.cluster);
      return left.containers.length === 0 && left.volumes.length === 0;
    },
    { timeoutMs: 10_000, message: 'no container or volume of the aborted create left' },
  );
});
