import { type TroupeError } from '@troupe/proto';
import {
  checkParentKind,
  ledgerActorId,
  ledgerRootOfActorId,
  parseLedgerRoot,
  parseScopeId,
  scopeFitsRoot,
  tryParseScopeId,
} from '../../src/budget/scope-id';

function thrown(fn: () => unknown): TroupeError {
  try {
    fn();
  } catch (err) {
    return err as TroupeError;
  }
  throw new Error('expected a throw');
}

test('valid scope ids parse into their kind and parts', () => {
  expect(parseScopeId('cluster')).toEqual({ id: 'cluster', kind: 'cluster' });
  expect(parseScopeId('job:j-1_A')).toEqual({ id: 'job:j-1_A', kind: 'job', jobId: 'j-1_A' });
  expect(parseScopeId('agent:j1/s-2')).toEqual({
    id: 'agent:j1/s-2',
    kind: 'agent',
    jobId: 'j1',
    sessionId: 's-2',
  });
});

test.each([
  '',
  'Cluster',
  'job:',
  'job:a.b',
  'job:a/b',
  'agent:j1',
  'agent:j1/',
  'agent:/s',
  'agent:j1/s/t',
  'agent:j1/s 2',
  `job:${'x'.repeat(129)}`,
  'team:x',
  42,
  null,
])('invalid scope id %p is INVALID_ARGUMENT naming the field', (value) => {
  expect(tryParseScopeId(value)).toBeUndefined();
  expect(thrown(() => parseScopeId(value, 'parent'))).toMatchObject({
    code: 'INVALID_ARGUMENT',
    details: { field: 'parent' },
  });
});

test('parent kinds: job under cluster, agent under its own job or another agent of it', () => {
  const p = parseScopeId;
  expect(() => checkParentKind(p('job:j'), p('cluster'))).not.toThrow();
  expect(() => checkParentKind(p('agent:j/a'), p('job:j'))).not.toThrow();
  expect(() => checkParentKind(p('agent:j/b'), p('agent:j/a'))).not.toThrow();
  for (const [scope, parent] of [
    ['job:j', 'job:k'],
    ['agent:j/a', 'job:k'],
    ['agent:j/a', 'agent:k/a'],
    ['agent:j/a', 'cluster'],
    ['agent:j/a', 'agent:j/a'],
    ['cluster', 'job:j'],
  ] as const) {
    expect(thrown(() => checkParentKind(p(scope), p(parent)))).toMatchObject({
      code: 'INVALID_ARGUMENT',
      details: { field: 'parent' },
    });
  }
});

test('ledger roots map to actor ids and back; only cluster and job scopes can be roots', () => {
  expect(ledgerActorId('cluster')).toBe('cluster');
  expect(ledgerActorId('job:j-1')).toBe('job-j-1');
  expect(ledgerRootOfActorId('job-j-1')).toBe('job:j-1');
  expect(ledgerRootOfActorId('cluster')).toBe('cluster');
  expect(ledgerRootOfActorId('nope')).toBeUndefined();
  const long = `job:${'x'.repeat(124)}`;
  expect(ledgerActorId(long)).toHaveLength(128);
  expect(thrown(() => parseLedgerRoot(`job:${'x'.repeat(125)}`))).toMatchObject({
    code: 'INVALID_ARGUMENT',
    details: { field: 'root' },
  });
  expect(thrown(() => parseLedgerRoot('agent:j/a'))).toMatchObject({ code: 'INVALID_ARGUMENT' });
  expect(scopeFitsRoot(parseScopeId('agent:j/a'), parseScopeId('job:j'))).toBe(true);
  expect(scopeFitsRoot(parseScopeId('agent:k/a'), parseScopeId('job:j'))).toBe(false);
  expect(scopeFitsRoot(parseScopeId('cluster'), parseScopeId('job:j'))).toBe(false);
  expect(scopeFitsRoot(parseScopeId('agent:k/a'), parseScopeId('cluster'))).toBe(true);
});
