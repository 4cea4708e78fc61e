import { isSecretLikeEnvKey, parseSandboxSpec, policyExceptionsOf } from '@troupe/node-agent';

const labels = { cluster: 'c1', host: 'h1', actor: 'sandbox/s1' };

describe('parseSandboxSpec', () => {
  test('defaults are the sandbox policy, with no exceptions', () => {
    const spec = parseSandboxSpec({ image: 'troupe-busybox:latest', labels });
    expect(spec).toEqual({
      image: 'troupe-busybox:latest',
      workdir: '/workspace',
      memoryMb: 512,
      cpus: 1,
      pidsLimit: 256,
      tmpfsMb: 256,
      env: {},
      allowSecretEnvKeys: [],
      files: {},
      network: 'none',
      user: '1000:1000',
      readOnlyRoot: true,
      volumes: [],
      tmpfs: {},
      labels: { ...labels, job: '' },
      policyExceptions: [],
    });
  });

  test('records every loosening of the policy', () => {
    const spec = parseSandboxSpec({
      image: 'x',
      labels,
      network: 'bridge',
      user: '0:0',
      readOnlyRoot: false,
      env: { GH_TOKEN: 't', PLAIN: 'p' },
      allowSecretEnvKeys: ['GH_TOKEN'],
    });
    expect(spec.policyExceptions).toEqual([
      'network:bridge',
      'user:root',
      'rootfs:writable',
      'env:GH_TOKEN',
    ]);
    expect(policyExceptionsOf(spec)).toEqual(spec.policyExceptions);
  });

  test('a parsed spec parses again to the same value', () => {
    const spec = parseSandboxSpec({ image: 'x', labels, network: 'bridge' });
    expect(parseSandboxSpec(spec)).toEqual(spec);
  });

  test('refuses secret-looking env keys unless allowed, naming the key', () => {
    expect(() => parseSandboxSpec({ image: 'x', labels, env: { OPENAI_API_KEY: 'sk' } })).toThrow(
      /spec\.env\.OPENAI_API_KEY: looks like a secret/,
    );
    for (const key of [
      'AWS_SECRET_ACCESS_KEY',
      'GITHUB_TOKEN',
      'DB_PASSWORD',
      'MY_APIKEY',
      'AUTH',
    ]) {
      expect(isSecretLikeEnvKey(key)).toBe(true);
    }
    for (const key of ['PATH', 'HOME', 'TOKENIZERS_PARALLELISM', 'KEYBOARD', 'PYTHONPATH']) {
      expect(isSecretLikeEnvKey(key)).toBe(false);
    }
  });

  test('names each broken field and rule', () => {
    let message = '';
    try {
      parseSandboxSpec({
        image: '',
        labels: { cluster: 'Bad_Cluster', host: 'h', actor: 'a' },
        memoryMb: 1,
        workdir: '/tmp',
        env: { TROUPE_TASK: 'x' },
        extra: true,
      } as never);
    } catch (err) {
      expect(err).toMatchObject({ code: 'INVALID_ARGUMENT' });
      message = (err as Error).message;
    }
    expect(message).toContain('spec.image');
    expect(message).toContain('spec.labels.cluster: must match [a-z0-9-]{1,32}');
    expect(message).toContain('spec.memoryMb');
    expect(message).toContain('spec.workdir');
    expect(message).toContain('spec.env.TROUPE_TASK');
    expect(message).toMatch(/extra/);
  });

  test('refuses mounts that collide, nest or escape', () => {
    expect(() => parseSandboxSpec({ image: 'x', labels, volumes: ['/workspace'] })).toThrow(
      /used twice/,
    );
    expect(() => parseSandboxSpec({ image: 'x', labels, volumes: ['/workspace/sub'] })).toThrow(
      /nest/,
    );
    expect(() => parseSandboxSpec({ image: 'x', labels, volumes: ['/a/../etc'] })).toThrow(
      /normalised/,
    );
    expect(() => parseSandboxSpec({ image: 'x', labels, tmpfs: { '/proc/x': 1 } })).toThrow(
      /must not be/,
    );
    expect(() => parseSandboxSpec({ image: 'x', labels, files: { '../x': 'a' } })).toThrow(
      /relative path/,
    );
    expect(
      parseSandboxSpec({ image: 'x', labels, volumes: ['/grader'], tmpfs: { '/out': 4 } }).volumes,
    ).toEqual(['/grader']);
  });
});
