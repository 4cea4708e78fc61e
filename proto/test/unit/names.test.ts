import {
  type ActorAddress,
  actorSubject,
  actorSubjectFilter,
  actorSubjectPrefix,
  CoordService,
  coordSubject,
  coordSubjectFilter,
  deadLetterStreamName,
  deadLetterSubject,
  deadLetterSubjectFilter,
  directoryKey,
  eventsStreamName,
  eventsSubject,
  eventsSubjectFilter,
  formatAddress,
  hostSubject,
  hostSubjectFilter,
  HostVerb,
  inboxStreamName,
  inboxSubject,
  inboxSubjectFilter,
  KvBucket,
  kvBucketName,
  objectStoreName,
  bankObjectStoreName,
  parseActorKey,
  parseActorSubject,
  parseAddress,
  parseEventsSubject,
  parseInboxSubject,
  stateKey,
  trajectoryStreamName,
  trajectorySubject,
  trajectorySubjectFilter,
  type TroupeError,
  validateActorId,
  validateActorKind,
  validateAddress,
  validateClusterName,
  validateHostId,
  validateJobId,
  LEASE_SUBJECT_PATTERN,
  leaseSubject,
} from '@troupe/proto';

const addr: ActorAddress = { kind: 'counter', id: 'c1' };

/** Runs `fn`, expects an INVALID_ARGUMENT and returns it. */
function invalid(fn: () => unknown): TroupeError {
  try {
    fn();
  } catch (e) {
    const err = e as TroupeError;
    expect(err.name).toBe('TroupeError');
    expect(err.code).toBe('INVALID_ARGUMENT');
    return err;
  }
  throw new Error('expected INVALID_ARGUMENT, nothing was thrown');
}

/** A concrete subject: dot-separated non-empty tokens without spaces or wildcards. */
function expectConcreteSubject(subject: string): void {
  expect(subject).not.toMatch(/[\s*>]/);
  expect(subject.split('.').every((t) => t.length > 0)).toBe(true);
}

describe('validation', () => {
  it.each([
    ['cluster name', validateClusterName, ['default', 'dev-1', '0', 'a'.repeat(32), '-x-']],
    ['actor kind', validateActorKind, ['counter', 'a', 'agent-v2', `a${'b'.repeat(31)}`]],
    ['actor id', validateActorId, ['c1', 'A_b-9', 'x'.repeat(128)]],
    ['host id', validateHostId, ['h1', 'Node_01-a', 'h'.repeat(64)]],
    ['job id', validateJobId, ['j1', 'JOB_2024-01', 'j'.repeat(128)]],
  ] as const)('%s accepts valid values and returns them', (_field, validate, values) => {
    for (const value of values) expect(validate(value)).toBe(value);
  });

  it.each([
    [
      'cluster name',
      validateClusterName,
      ['', 'Default', 'a.b', 'a b', 'a_b', 'a*', 'a>', 'a'.repeat(33), 'é'],
      'must match [a-z0-9-]{1,32}',
    ],
    [
      'actor kind',
      validateActorKind,
      ['', 'Bad.Kind', '1abc', '-a', 'a_b', 'a b', 'Counter', `a${'b'.repeat(32)}`, '*', '>'],
      'must match [a-z][a-z0-9-]{0,31}',
    ],
    [
      'actor id',
      validateActorId,
      ['', 'a.b', 'a b', 'a*', '>', 'x'.repeat(129), 'a/b', 'ü'],
      'must match [A-Za-z0-9_-]{1,128}',
    ],
    [
      'host id',
      validateHostId,
      ['', 'h.1', 'h 1', 'h'.repeat(65), 'h*'],
      'must match [A-Za-z0-9_-]{1,64}',
    ],
    [
      'job id',
      validateJobId,
      ['', 'j.1', 'j'.repeat(129), 'j>'],
      'must match [A-Za-z0-9_-]{1,128}',
    ],
  ] as const)(
    '%s rejects invalid values naming the value and the rule',
    (field, validate, values, rule) => {
      for (const value of values) {
        const err = invalid(() => validate(value));
        expect(err.message).toContain(field);
        expect(err.message).toContain(rule);
        expect(err.message).toContain(JSON.stringify(value).slice(0, 40));
        expect(err.details).toEqual({ field, rule });
      }
    },
  );

  it('gives the documented message for a bad kind', () => {
    expect(invalid(() => validateActorKind('Bad.Kind')).message).toBe(
      '`actor kind`: must match [a-z][a-z0-9-]{0,31} (got "Bad.Kind")',
    );
  });

  it('rejects non-strings (which a regex test would coerce, e.g. undefined → "undefined")', () => {
    for (const value of [undefined, null, 42, {}, ['counter']]) {
      expect(invalid(() => validateActorKind(value)).message).toContain('must be a string');
    }
  });

  it('validates addresses and strips extra fields', () => {
    expect(validateAddress({ kind: 'counter', id: 'c1', extra: true })).toEqual(addr);
    invalid(() => validateAddress(null));
    invalid(() => validateAddress('counter/c1'));
    expect(invalid(() => validateAddress({ kind: 'counter', id: 'a.b' })).message).toContain(
      'actor id',
    );
    expect(invalid(() => validateAddress({ kind: 'Counter', id: 'c1' })).message).toContain(
      'actor kind',
    );
  });

  it('formats and parses kind/id', () => {
    expect(formatAddress(addr)).toBe('counter/c1');
    expect(parseAddress('counter/c1')).toEqual(addr);
    expect(parseAddress(formatAddress({ kind: 'a-b', id: 'X_1-2' }))).toEqual({
      kind: 'a-b',
      id: 'X_1-2',
    });
    for (const bad of ['counter', 'counter/', '/c1', 'counter/c1/x', 'Counter/c1', 'a/b.c', '']) {
      invalid(() => parseAddress(bad));
    }
    invalid(() => formatAddress({ kind: 'counter', id: '' }));
  });
});

describe('builders', () => {
  it('builds the actor, inbox and dead-letter subjects', () => {
    expect(actorSubject('default', addr)).toBe('troupe.default.actor.counter.c1');
    expect(actorSubjectPrefix('default')).toBe('troupe.default.actor.');
    expect(actorSubject('default', addr).startsWith(actorSubjectPrefix('default'))).toBe(true);
    expect(actorSubjectFilter('default')).toBe('troupe.default.actor.>');
    expect(actorSubjectFilter('default', 'counter')).toBe('troupe.default.actor.counter.*');
    expect(inboxSubject('dev', addr)).toBe('troupe.dev.inbox.counter.c1');
    expect(inboxSubjectFilter('dev')).toBe('troupe.dev.inbox.>');
    expect(deadLetterSubject('dev', addr)).toBe('troupe.dev.dlq.counter.c1');
    expect(deadLetterSubjectFilter('dev')).toBe('troupe.dev.dlq.>');
    expect(trajectorySubject('dev', 'root_1-a')).toBe('troupe.dev.trajectory.root_1-a');
    expect(trajectorySubjectFilter('dev')).toBe('troupe.dev.trajectory.>');
    expect(() => trajectorySubject('dev', 'a.b')).toThrow(/actor id/);
  });

  it('builds stream names upper-cased with - turned into _', () => {
    expect(inboxStreamName('default')).toBe('TROUPE_DEFAULT_INBOX');
    expect(inboxStreamName('my-test-1')).toBe('TROUPE_MY_TEST_1_INBOX');
    expect(deadLetterStreamName('my-test-1')).toBe('TROUPE_MY_TEST_1_DLQ');
    expect(eventsStreamName('my-test-1')).toBe('TROUPE_MY_TEST_1_EVENTS');
    expect(trajectoryStreamName('my-test-1')).toBe('TROUPE_MY_TEST_1_TRAJECTORY');
    for (const name of [
      inboxStreamName('a-b'),
      deadLetterStreamName('a-b'),
      eventsStreamName('a-b'),
    ]) {
      expect(name).toMatch(/^[A-Z0-9_]+$/);
    }
  });

  it('builds host subjects for every verb', () => {
    expect(Object.values(HostVerb).sort()).toEqual(
      ['activate', 'deactivate', 'drain', 'ping', 'stats'].sort(),
    );
    for (const verb of Object.values(HostVerb)) {
      expect(hostSubject('dev', 'host_1', verb)).toBe(`troupe.dev.host.host_1.${verb}`);
    }
    expect(hostSubjectFilter('dev', 'host_1')).toBe('troupe.dev.host.host_1.*');
    invalid(() => hostSubject('dev', 'host_1', 'reboot' as HostVerb));
    invalid(() => hostSubject('dev', 'host.1', HostVerb.PING));
  });

  it('builds coordinator subjects with validated verbs', () => {
    expect(Object.values(CoordService).sort()).toEqual(
      ['budget', 'directory', 'jobs', 'nodes', 'sched'].sort(),
    );
    expect(coordSubject('dev', CoordService.BUDGET, 'reserve')).toBe(
      'troupe.dev.coord.budget.reserve',
    );
    expect(coordSubject('dev', 'sched', 'activate-now')).toBe(
      'troupe.dev.coord.sched.activate-now',
    );
    expect(coordSubjectFilter('dev', 'jobs')).toBe('troupe.dev.coord.jobs.*');
    for (const verb of ['', 'Reserve', 'a.b', 'a b', '*', '>', '1x', '-x']) {
      expect(invalid(() => coordSubject('dev', 'budget', verb)).message).toContain(
        'must match [a-z][a-z0-9-]*',
      );
    }
    invalid(() => coordSubject('dev', 'ledger' as CoordService, 'x'));
  });

  it('builds event subjects', () => {
    expect(eventsSubject('dev', 'job_42')).toBe('troupe.dev.events.job_42');
    expect(eventsSubjectFilter('dev')).toBe('troupe.dev.events.>');
    invalid(() => eventsSubject('dev', 'job.42'));
  });

  it('builds KV bucket and object store names', () => {
    expect(Object.values(KvBucket).sort()).toEqual(
      [
        'banks',
        'budget',
        'defs',
        'directory',
        'jobs',
        'leases',
        'memory',
        'nodes',
        'reminders',
        'results',
        'sequences',
        'skill_library',
        'skills',
        'state',
      ].sort(),
    );
    for (const bucket of Object.values(KvBucket)) {
      const name = kvBucketName('my-test', bucket);
      expect(name).toBe(`troupe_my-test_${bucket}`);
      expect(name).toMatch(/^[A-Za-z0-9_-]+$/); // the NATS bucket name rule
    }
    expect(objectStoreName('my-test')).toBe('troupe_my-test_artifacts');
    expect(bankObjectStoreName('my-test')).toBe('troupe_my-test_banks');
    invalid(() => kvBucketName('dev', 'secrets' as KvBucket));
  });

  it('builds KV keys and parses them back', () => {
    expect(directoryKey(addr)).toBe('counter.c1');
    expect(stateKey({ kind: 'a-b', id: 'X_1-2' })).toBe('a-b.X_1-2');
    expect(directoryKey(addr)).toMatch(/^[-/_=.a-zA-Z0-9]+$/); // the NATS KV key rule
    expect(parseActorKey('counter.c1')).toEqual(addr);
    expect(parseActorKey('counter')).toBeUndefined();
    expect(parseActorKey('counter.c1.x')).toBeUndefined();
    expect(parseActorKey('Counter.c1')).toBeUndefined();
    invalid(() => stateKey({ kind: 'counter', id: 'c.1' }));
  });

  it('rejects an invalid cluster in every builder', () => {
    const builders: (() => unknown)[] = [
      () => actorSubject('Bad', addr),
      () => actorSubjectPrefix('a.b'),
      () => actorSubjectFilter('a b'),
      () => inboxSubject('*', addr),
      () => inboxSubjectFilter('>'),
      () => inboxStreamName(''),
      () => deadLetterSubject('A', addr),
      () => deadLetterSubjectFilter('a_b'),
      () => deadLetterStreamName('a.b'),
      () => hostSubject('a.b', 'h1', 'ping'),
      () => hostSubjectFilter('a.b', 'h1'),
      () => coordSubject('a.b', 'jobs', 'list'),
      () => coordSubjectFilter('a.b', 'jobs'),
      () => eventsSubject('a.b', 'j1'),
      () => eventsSubjectFilter('a.b'),
      () => eventsStreamName('a.b'),
      () => kvBucketName('a.b', 'state'),
      () => objectStoreName('a.b'),
      () => parseActorSubject('a.b', 'troupe.a.b.actor.counter.c1'),
    ];
    for (const build of builders) {
      expect(invalid(build).message).toContain('cluster name');
    }
  });

  it('never produces spaces, wildcards or empty tokens', () => {
    const kinds = ['a', 'counter', `k${'-'.repeat(31)}`];
    const ids = ['0', '-', '_', 'A-z_9', 'x'.repeat(128)];
    const clusters = ['0', '-', 'default', 'a'.repeat(32)];
    for (const c of clusters) {
      for (const kind of kinds) {
        for (const id of ids) {
          const a = { kind, id };
          for (const subject of [actorSubject(c, a), inboxSubject(c, a), deadLetterSubject(c, a)]) {
            expectConcreteSubject(subject);
            expect(subject.split('.')).toHaveLength(5);
          }
          expectConcreteSubject(directoryKey(a));
        }
      }
      for (const verb of Object.values(HostVerb)) expectConcreteSubject(hostSubject(c, 'h', verb));
      expectConcreteSubject(coordSubject(c, 'directory', 'lookup'));
      expectConcreteSubject(eventsSubject(c, 'j-1'));
    }
  });
});

describe('parsing subjects', () => {
  it('parses actor subjects of the cluster only', () => {
    expect(parseActorSubject('dev', actorSubject('dev', addr))).toEqual(addr);
    expect(parseActorSubject('dev', 'troupe.prod.actor.counter.c1')).toBeUndefined();
    expect(parseActorSubject('dev', 'troupe.dev.inbox.counter.c1')).toBeUndefined();
    expect(parseActorSubject('dev', 'troupe.dev.actor.counter')).toBeUndefined();
    expect(parseActorSubject('dev', 'troupe.dev.actor.counter.c1.extra')).toBeUndefined();
    expect(parseActorSubject('dev', 'troupe.dev.actor.Counter.c1')).toBeUndefined();
    expect(parseActorSubject('dev', 'troupe.dev.actor.counter.*')).toBeUndefined();
    expect(parseActorSubject('dev', 'troupe.dev.actorx.counter.c1')).toBeUndefined();
    expect(parseActorSubject('de', 'troupe.dev.actor.counter.c1')).toBeUndefined();
  });

  it('parses inbox and events subjects', () => {
    expect(parseInboxSubject('dev', inboxSubject('dev', addr))).toEqual(addr);
    expect(parseInboxSubject('dev', actorSubject('dev', addr))).toBeUndefined();
    expect(parseEventsSubject('dev', eventsSubject('dev', 'job-1'))).toBe('job-1');
    expect(parseEventsSubject('dev', 'troupe.dev.events.job.1')).toBeUndefined();
    expect(parseEventsSubject('dev', 'troupe.dev.events.')).toBeUndefined();
    expect(parseEventsSubject('prod', eventsSubject('dev', 'job-1'))).toBeUndefined();
  });
});

describe('lease subjects', () => {
  it('builds _INBOX.<token> and refuses a bad token naming the field', () => {
    expect(leaseSubject('c1', 'a1b2')).toBe('troupe.c1.lease.a1b2');
    expect(LEASE_SUBJECT_PATTERN.test('_INBOX.a1b2')).toBe(false);
    expect(LEASE_SUBJECT_PATTERN.test(leaseSubject('c1', 'x'.repeat(64)))).toBe(true);
    expect(() => leaseSubject('c1', '')).toThrow(/`token`: must match/);
    expect(() => leaseSubject('c1', 'a.b')).toThrow(/`token`: must match/);
    expect(() => leaseSubject('c1', 'x'.repeat(65))).toThrow(/`token`/);
  });
});
