import { applyEnvironment, ConfigSchema } from '@troupe/coordinator';

describe('coordinator applyEnvironment', () => {
  it('maps every variable onto the config the schema then accepts', () => {
    const { config, issues } = applyEnvironment(
      { metrics: { host: '0.0.0.0' } },
      {
        TROUPE_CLUSTER: 'prod',
        TROUPE_NATS_URL: 'nats://a:4222,nats://b:4222',
        TROUPE_NATS_TOKEN: 'nt',
        TROUPE_COORDINATOR_ID: 'coord-1',
        TROUPE_METRICS_PORT: 'off',
        TROUPE_GRPC_HOST: '127.0.0.1',
        TROUPE_GRPC_PORT: '0',
        TROUPE_GRPC_TOKEN: ' a-long-enough-bearer-token-0123456789 ',
        TROUPE_SHUTDOWN_GRACE_MS: '500',
        TROUPE_LOG_LEVEL: 'warn',
        TROUPE_REPLICAS: '3',
        TROUPE_ACTOR_RETENTION_MS: '60000',
        TROUPE_JOB_RETENTION_MS: '86400000',
      },
    );
    expect(issues).toEqual([]);
    expect(config).toEqual({
      cluster: 'prod',
      logLevel: 'warn',
      coordinatorId: 'coord-1',
      nats: { servers: ['nats://a:4222', 'nats://b:4222'], token: 'nt' },
      metrics: { host: '0.0.0.0', port: null },
      grpc: { host: '127.0.0.1', port: 0, token: 'a-long-enough-bearer-token-0123456789' },
      shutdownGraceMs: 500,
      replicas: 3,
      actorRetentionMs: 60_000,
      jobRetentionMs: 86_400_000,
    });
    expect(ConfigSchema.safeParse(config).success).toBe(true);
  });

  it('refuses replicas outside 1..5, naming the field', () => {
    const parsed = ConfigSchema.safeParse({ replicas: 7 });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.path).toEqual(['replicas']);
    expect(ConfigSchema.parse({}).replicas).toBe(1);
  });

  it('returns every syntax problem named by its variable', () => {
    const { issues } = applyEnvironment(
      {},
      {
        TROUPE_METRICS_PORT: 'nine',
        TROUPE_GRPC_PORT: '-1',
        TROUPE_SHUTDOWN_GRACE_MS: '1s',
        TROUPE_REPLICAS: 'three',
        TROUPE_ACTOR_RETENTION_MS: 'forever',
        TROUPE_JOB_RETENTION_MS: '7d',
      },
    );
    expect(issues).toEqual([
      "TROUPE_REPLICAS: must be a non-negative integer (got 'three')",
      "TROUPE_METRICS_PORT: must be a non-negative integer (got 'nine')",
      "TROUPE_GRPC_PORT: must be a non-negative integer (got '-1')",
      "TROUPE_SHUTDOWN_GRACE_MS: must be a non-negative integer (got '1s')",
      "TROUPE_ACTOR_RETENTION_MS: must be a non-negative integer (got 'forever')",
      "TROUPE_JOB_RETENTION_MS: must be a non-negative integer (got '7d')",
    ]);
  });

  it('keeps finished jobs until deleted by default; a retention deletes them', () => {
    expect(ConfigSchema.parse({}).jobRetentionMs).toBeNull();
    const { config } = applyEnvironment({}, { TROUPE_JOB_RETENTION_MS: '3600000' });
    expect(ConfigSchema.parse(config).jobRetentionMs).toBe(3_600_000);
    const never = applyEnvironment({}, { TROUPE_JOB_RETENTION_MS: 'never' }).config;
    expect(ConfigSchema.parse(never).jobRetentionMs).toBeNull();
    const parsed = ConfigSchema.safeParse({ jobRetentionMs: 1.5 });
    expect(parsed.error?.issues[0]?.path).toEqual(['jobRetentionMs']);
  });

  it("keeps finished jobs' actors 10 minutes by default; `never` (null) keeps them", () => {
    expect(ConfigSchema.parse({}).actorRetentionMs).toBe(600_000);
    const { config } = applyEnvironment({}, { TROUPE_ACTOR_RETENTION_MS: 'never' });
    expect(ConfigSchema.parse(config).actorRetentionMs).toBeNull();
    const parsed = ConfigSchema.safeParse({ actorRetentionMs: -1 });
    expect(parsed.error?.issues[0]?.path).toEqual(['actorRetentionMs']);
  });
});
