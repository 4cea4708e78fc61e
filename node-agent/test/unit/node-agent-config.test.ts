import { applyEnvironment, ConfigSchema, defaultSlots, hostIdOf } from '@troupe/node-agent';

function issues(raw: unknown): string[] {
  const r = ConfigSchema.safeParse(raw);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

describe('node agent ConfigSchema', () => {
  test('every field has a default', () => {
    const c = ConfigSchema.parse({});
    expect(c).toMatchObject({
      cluster: 'default',
      nats: { servers: 'nats://127.0.0.1:4222' },
      backend: 'auto',
      allowProcessBackend: false,
      docker: { socketPath: '/var/run/docker.sock' },
      sandbox: { idleTimeoutMs: 1_800_000, defaultExecTimeoutMs: 60_000 },
      evaluator: { defaultTimeoutMs: 600_000, maxStoredGrades: 500 },
      images: { allowBuild: true },
      warmPools: [],
      reaper: { intervalMs: 60_000, minAgeMs: 30_000 },
      shutdownGraceMs: 30_000,
      standalone: false,
      labels: {},
      slots: {},
    });
    expect(c.hostId).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  test('names every bad field and the cross-field rules', () => {
    expect(
      issues({
        cluster: 'Bad_Name',
        hostId: 'a.b',
        slots: { sandbox: -1, vm: 2 },
        backend: 'process',
        nats: { user: 'u' },
        warmPools: [{ image: 'troupe-busybox:latest', size: 1, memoryMb: 1 }],
        surprise: true,
      }),
    ).toEqual(
      expect.arrayContaining([
        'cluster: must match [a-z0-9-]{1,32}',
        'hostId: must match [A-Za-z0-9_-]{1,64}',
        expect.stringMatching(/^slots\.sandbox: /),
        expect.stringMatching(/^slots: Unrecognized key.*vm/),
        expect.stringMatching(/^warmPools\.0\.memoryMb: /),
        expect.stringMatching(/^(: )?Unrecognized key.*surprise/),
      ]),
    );
    // Cross-field rules run once the fields themselves are valid.
    expect(issues({ backend: 'process', nats: { user: 'u' } })).toEqual([
      "allowProcessBackend: must be true when backend is 'process': the process backend isolates nothing (development only)",
      'nats.user: user and pass go together',
    ]);
    expect(
      issues({ backend: 'process', allowProcessBackend: true, warmPools: [{ image: 'x' }] }),
    ).toEqual(["warmPools: warm pools need the Docker backend (backend is 'process')"]);
  });
});

describe('applyEnvironment', () => {
  test('overrides the file with the TROUPE_* variables', () => {
    const { config, issues: problems } = applyEnvironment(
      { cluster: 'from-file', labels: { zone: 'a' }, nats: { user: 'u', pass: 'p' } },
      {
        TROUPE_CLUSTER: 'c1',
        TROUPE_NATS_URL: 'nats://a:4222, nats://b:4222',
        TROUPE_HOST_ID: 'node-7',
        TROUPE_NODE_LABELS: 'gpu=none, disk=ssd',
        TROUPE_SLOTS: 'sandbox=4,evaluator=1',
        TROUPE_ALLOW_PROCESS_BACKEND: 'yes',
        TROUPE_LOG_LEVEL: 'debug',
        TROUPE_DOCKER_SOCKET: '/run/docker.sock',
        UNRELATED: 'x',
      },
    );
    expect(problems).toEqual([]);
    expect(ConfigSchema.parse(config)).toMatchObject({
      cluster: 'c1',
      hostId: 'node-7',
      nats: { servers: ['nats://a:4222', 'nats://b:4222'], user: 'u', pass: 'p' },
      labels: { zone: 'a', gpu: 'none', disk: 'ssd' },
      slots: { sandbox: 4, evaluator: 1 },
      allowProcessBackend: true,
      logLevel: 'debug',
      docker: { socketPath: '/run/docker.sock' },
    });
  });

  test('TROUPE_NODE_NAME: a Kubernetes node name becomes a valid host id', () => {
    const hostIdFrom = (env: Record<string, string>) =>
      ConfigSchema.parse(applyEnvironment({}, env).config).hostId;
    // EKS names nodes by their DNS name: dots cannot be in a NATS subject token.
    expect(hostIdFrom({ TROUPE_NODE_NAME: 'ip-10-0-1-2.ec2.internal' })).toBe(
      'ip-10-0-1-2-ec2-internal',
    );
    expect(hostIdFrom({ TROUPE_NODE_NAME: 'gke-pool-1-abcd' })).toBe('gke-pool-1-abcd');
    // An explicit host id wins; a name of 70 characters is cut to 64 without a trailing dash.
    expect(hostIdFrom({ TROUPE_NODE_NAME: 'a.b', TROUPE_HOST_ID: 'node-7' })).toBe('node-7');
    expect(hostIdFrom({ TROUPE_NODE_NAME: `${'n'.repeat(63)}.example` })).toBe('n'.repeat(63));
    expect(hostIdOf('...')).toBe('node');
    // Without it, the raw host id is still checked.
    expect(() =>
      ConfigSchema.parse(applyEnvironment({}, { TROUPE_HOST_ID: 'a.b' }).config),
    ).toThrow(/hostId/);
  });

  test('the vm kind: defaults, TROUPE_VM* overrides, refusals naming the field', () => {
    expect(ConfigSchema.parse({}).vm).toMatchObject({
      enabled: 'auto',
      accel: 'auto',
      warm: 0,
      imageDir: '/var/lib/troupe/vm-images',
    });
    const { config, issues: problems } = applyEnvironment(
      {},
      {
        TROUPE_VM: 'on',
        TROUPE_VM_STATE_DIR: '/srv/vms',
        TROUPE_VM_IMAGE_DIR: '/srv/images',
        TROUPE_VM_WARM: '2',
      },
    );
    expect(problems).toEqual([]);
    expect(ConfigSchema.parse(config).vm).toMatchObject({
      enabled: 'on',
      stateDir: '/srv/vms',
      imageDir: '/srv/images',
      warm: 2,
    });
    expect(applyEnvironment({}, { TROUPE_VM_WARM: 'lots' }).issues).toEqual([
      'TROUPE_VM_WARM: lots is not an integer',
    ]);
    expect(issues({ vm: { enabled: 'maybe', maxBoots: 0 } })).toEqual([
      expect.stringMatching(/^vm\.enabled: /),
      expect.stringMatching(/^vm\.maxBoots: /),
    ]);
  });

  test('reports malformed variables by name instead of guessing', () => {
    const { issues: problems } = applyEnvironment(
      {},
      {
        TROUPE_NODE_LABELS: 'gpu',
        TROUPE_SLOTS: 'sandbox=many',
        TROUPE_ALLOW_PROCESS_BACKEND: 'maybe',
      },
    );
    expect(problems).toEqual([
      "TROUPE_NODE_LABELS: 'gpu' is not key=value (expected k=v,k=v)",
      'TROUPE_SLOTS: sandbox=many is not a number',
      "TROUPE_ALLOW_PROCESS_BACKEND: must be 1, true, yes, 0, false or no (got 'maybe')",
    ]);
  });
});

describe('defaultSlots', () => {
  test('2 × cores sandboxes, cores evaluators and environments, bounded by memory, never 0', () => {
    expect(defaultSlots({ cpu: 8, memMb: 65_536 })).toEqual({
      sandbox: 16,
      evaluator: 8,
      environment: 8,
    });
    expect(defaultSlots({ cpu: 8, memMb: 4_096 })).toEqual({
      sandbox: 8,
      evaluator: 4,
      environment: 2,
    });
    expect(defaultSlots({ cpu: 1, memMb: 256 })).toEqual({
      sandbox: 1,
      evaluator: 1,
      environment: 1,
    });
  });
});
