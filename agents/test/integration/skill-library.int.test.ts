import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { randomClusterName, startNatsServer, type NatsServerHandle } from '@troupe/testkit';
import { extractFunctions } from '../../src/skill-library/extract-functions';
import { type AdmitOutcome, SkillLibrary } from '../../src/skill-library/skill-library';
import { type SkillProvenance } from '../../src/skill-library/skill-record';

// The SAGE skill library on a real JetStream (issue 19): admission, dedupe, versions, drops,
// retrieval with dependencies, JSONL export/import, and concurrent writers of one name on
// separate connections losing no version.

let server: NatsServerHandle;
let nc: NatsConnection;
let nc2: NatsConnection;
const cluster = randomClusterName();

beforeAll(async () => {
  server = await startNatsServer();
  nc = await connect({ servers: server.url });
  nc2 = await connect({ servers: server.url });
}, 60_000);
afterAll(async () => {
  await nc?.close();
  await nc2?.close();
  await server?.stop();
}, 30_000);

const libId = () => `lib-${randomUUID().slice(0, 8)}`;

function prov(over: Partial<SkillProvenance> = {}): SkillProvenance {
  return {
    jobId: 'job-1',
    scenario: 'split_bill',
    taskId: 'split_bill_1',
    step: 3,
    outcome: 'passed',
    at: '2026-12-02T08:00:00.000Z',
    ...over,
  };
}

const PAY = [
  'def request_payment(email, amount):',
  '    """Request `amount` from the person with `email`."""',
  '    token = login_payments()',
  '    return apis.payments.request(access_token=token, email=email, amount=amount)',
  '',
].join('\n');
const LOGIN = [
  'def login_payments():',
  '    """Log in to the payments app."""',
  '    pw = apis.supervisor.show_account_passwords()',
  '    return apis.payments.login(username=EMAIL, password=pw["payments"])["access_token"]',
  '',
].join('\n');
const NOTE = [
  'def read_note(title):',
  '    """Read the note titled `title`."""',
  '    return apis.notes.show(title=title)',
  '',
].join('\n');

test('admits, dedupes, versions and keeps provenance', async () => {
  const lib = await SkillLibrary.open(nc, { cluster, libraryId: libId() });
  const first = await lib.admit(extractFunctions(`${PAY}\n${LOGIN}\nprint(1)\n`), prov());
  expect(first).toEqual([
    { name: 'request_payment', admitted: true, version: 1 },
    { name: 'login_payments', admitted: true, version: 1 },
  ]);
  // Same source up to comments and blank lines: no new version.
  const again = await lib.admit(
    extractFunctions(PAY.replace('    token', '    # log in first\n\n    token')),
    prov({ taskId: 'split_bill_2' }),
  );
  expect(again).toEqual([
    { name: 'request_payment', admitted: false, reason: 'same source as v1' },
  ]);
  // A changed source is version 2, with its own provenance.
  const changed = PAY.replace('amount=amount)', 'amount=round(amount, 2))');
  const v2 = await lib.admit(extractFunctions(changed), prov({ taskId: 'split_bill_2', step: 7 }));
  expect(v2).toEqual([{ name: 'request_payment', admitted: true, version: 2 }]);

  const all = await lib.list();
  expect(all.map((r) => `${r.name}.v${r.version}`)).toEqual([
    'login_payments.v1',
    'request_payment.v1',
    'request_payment.v2',
  ]);
  const rp2 = all[2];
  expect(rp2?.provenance).toEqual(prov({ taskId: 'split_bill_2', step: 7 }));
  expect(rp2?.description).toBe('Request `amount` from the person with `email`.');
  expect(rp2?.dependencies).toEqual(['login_payments']);
  expect(rp2?.source).toBe(changed);
  expect(rp2?.scenario).toBe('split_bill');
});

test('applies the admission policy, the last definition of a batch, names and sizes', async () => {
  const lib = await SkillLibrary.open(nc, { cluster, libraryId: libId(), admission: 'passed' });
  expect(lib.admission).toBe('passed');
  expect(await lib.admit(extractFunctions(NOTE), prov({ outcome: 'failed' }))).toEqual([
    { name: 'read_note', admitted: false, reason: 'task failed and admission is passed' },
  ]);
  expect(await lib.admit(extractFunctions(NOTE), prov({ outcome: 'unknown' }))).toEqual([
    {
      name: 'read_note',
      admitted: false,
      reason: 'task outcome is unknown and admission is passed',
    },
  ]);
  const redefined = NOTE.replace('show(', 'show_note(');
  const huge = `def big():\n    return ${JSON.stringify('x'.repeat(20_100))}\n`;
  const out = await lib.admit(
    [
      ...extractFunctions(NOTE),
      ...extractFunctions(redefined),
      ...extractFunctions(huge),
      { name: 'not-an-identifier', source: 'def x(): pass\n', calls: [] },
    ],
    prov(),
  );
  expect(out).toEqual<AdmitOutcome[]>([
    { name: 'read_note', admitted: false, reason: 'redefined later in the same task' },
    { name: 'read_note', admitted: true, version: 1 },
    {
      name: 'big',
      admitted: false,
      reason: `source: must be at most 20000 characters (got ${huge.length})`,
    },
    {
      name: 'not-an-identifier',
      admitted: false,
      reason: 'name: must be a Python identifier ([A-Za-z_][A-Za-z0-9_]*)',
    },
  ]);
  expect((await lib.list()).map((r) => r.source)).toEqual([redefined]);

  await expect(lib.admit([], { ...prov(), step: -1 })).rejects.toThrow('provenance.step');
  await expect(SkillLibrary.open(nc, { cluster, libraryId: 'Bad Id' })).rejects.toThrow(
    'libraryId: must match [a-z0-9][a-z0-9_-]{0,63}',
  );
});

test('drops a version with its reason; retrieval falls back and pulls in dependencies', async () => {
  const libraryId = libId();
  const lib = await SkillLibrary.open(nc, { cluster, libraryId });
  await lib.admit(extractFunctions(`${LOGIN}\n${PAY}`), prov());
  await lib.admit(extractFunctions(NOTE), prov({ scenario: 'notes_digest', taskId: 'nd_1' }));
  const v2 = PAY.replace('amount=amount)', 'amount=float(amount))');
  await lib.admit(extractFunctions(v2), prov({ taskId: 'split_bill_2' }));

  // The scenario's skills first (all of them), each after the skills it calls.
  let got = await lib.retrieve({ scenario: 'split_bill', text: 'Split the bill' });
  expect(got.map((r) => `${r.name}.v${r.version}`)).toEqual([
    'login_payments.v1',
    'request_payment.v2',
  ]);
  // Another scenario's skills come only when the retriever finds them relevant.
  got = await lib.retrieve({ scenario: 'split_bill', text: 'read the note about the dinner' });
  expect(got.map((r) => r.name)).toEqual(['login_payments', 'request_payment', 'read_note']);

  // From another scenario: the ranked skill brings its dependency, placed before it.
  got = await lib.retrieve({ scenario: 'other', text: 'request a payment', limit: 1 });
  expect(got.map((r) => `${r.name}.v${r.version}`)).toEqual([
    'login_payments.v1',
    'request_payment.v2',
  ]);

  const by = prov({ scenario: 'other', taskId: 'other_1', step: 0, outcome: 'unknown' });
  await lib.drop('request_payment', 2, 'NameError: name round2 is not defined', by);
  await lib.drop('request_payment', 2, 'a second drop is ignored', by);
  const dropped = (await lib.list()).find((r) => r.name === 'request_payment' && r.version === 2);
  expect(dropped?.dropped).toMatchObject({
    reason: 'NameError: name round2 is not defined',
    by,
  });
  got = await lib.retrieve({ scenario: 'split_bill', text: 'Split the bill' });
  expect(got.map((r) => `${r.name}.v${r.version}`)).toEqual([
    'login_payments.v1',
    'request_payment.v1',
  ]);
  // The dropped source may come back as a new version (new evidence that it works).
  expect(await lib.admit(extractFunctions(v2), prov({ taskId: 'split_bill_3' }))).toEqual([
    { name: 'request_payment', admitted: true, version: 3 },
  ]);
  await expect(lib.drop('request_payment', 9, 'x', by)).rejects.toThrow('no version 9');
  await expect(lib.drop('request_payment', 1, '', by)).rejects.toThrow('`reason`');
  await expect(lib.retrieve({ scenario: 'x', text: 'y', limit: -1 })).rejects.toThrow(
    '`limit`: must be a non-negative integer (got -1)',
  );
  expect(await lib.retrieve({ scenario: 'split_bill', text: 'bill', limit: 0 })).toEqual([]);
});

test('retrieval prefers the version written in the query scenario', async () => {
  const lib = await SkillLibrary.open(nc, { cluster, libraryId: libId() });
  const mine = 'def total(xs):\n    return sum(xs)\n';
  const theirs = 'def total(xs):\n    return sum(x["amount"] for x in xs)\n';
  await lib.admit(extractFunctions(mine), prov({ scenario: 'a' }));
  await lib.admit(extractFunctions(theirs), prov({ scenario: 'b' }));
  const inA = await lib.retrieve({ scenario: 'a', text: 'total' });
  expect(inA.map((r) => r.version)).toEqual([1]);
  const inC = await lib.retrieve({ scenario: 'c', text: 'total' });
  expect(inC.map((r) => r.version)).toEqual([2]);
});

test('exports as JSONL and imports into another library, validating each line', async () => {
  const lib = await SkillLibrary.open(nc, { cluster, libraryId: libId() });
  await lib.admit(extractFunctions(`${LOGIN}\n${PAY}\n${NOTE}`), prov());
  await lib.drop('read_note', 1, 'broken in a new world', prov({ taskId: 'split_bill_2' }));
  const jsonl = await lib.exportJsonl();
  expect(jsonl.trimEnd().split('\n')).toHaveLength(3);

  const copy = await SkillLibrary.open(nc2, { cluster, libraryId: libId() });
  expect(await copy.importJsonl(jsonl)).toBe(3);
  const strip = (rs: { libraryId: string }[]) => rs.map(({ libraryId: _l, ...r }) => r);
  expect(strip(await copy.list())).toEqual(strip(await lib.list()));
  expect((await copy.list()).every((r) => r.libraryId === copy.libraryId)).toBe(true);
  // Re-importing the same lines writes nothing and fails nothing.
  expect(await copy.importJsonl(jsonl)).toBe(0);

  const lines = jsonl.trimEnd().split('\n');
  const bad = JSON.parse(lines[1] ?? '{}') as Record<string, unknown>;
  bad.provenance = { ...(bad.provenance as object), step: 'three' };
  const fresh = await SkillLibrary.open(nc, { cluster, libraryId: libId() });
  await expect(
    fresh.importJsonl([lines[0], JSON.stringify(bad), lines[2]].join('\n')),
  ).rejects.toThrow('line 2.provenance.step');
  await expect(fresh.importJsonl(`${lines[0]}\nnot json\n`)).rejects.toThrow(
    '`line 2`: is not JSON',
  );
  const tampered = { ...(JSON.parse(lines[0] ?? '{}') as object), source: 'def x(): pass\n' };
  await expect(fresh.importJsonl(JSON.stringify(tampered))).rejects.toThrow('line 1.sourceHash');
  // Nothing was written by the failed imports.
  expect(await fresh.list()).toEqual([]);

  // A version that exists with another source is refused, naming the line.
  const other = await SkillLibrary.open(nc, { cluster, libraryId: libId() });
  await other.admit(extractFunctions(LOGIN.replace('["payments"]', '["pay"]')), prov());
  await expect(other.importJsonl(jsonl)).rejects.toThrow(
    "`line 1`: version 1 of skill 'login_payments' already exists with another source",
  );
});

test('concurrent writers of one name on two connections keep every version', async () => {
  const libraryId = libId();
  const a = await SkillLibrary.open(nc, { cluster, libraryId });
  const b = await SkillLibrary.open(nc2, { cluster, libraryId });
  const rounds = 20;
  const src = (w: string, i: number) =>
    `def pay_share(x):\n    return x * ${i} + ${JSON.stringify(w)}\n`;
  const admits: Promise<AdmitOutcome[]>[] = [];
  for (let i = 0; i < rounds; i++) {
    admits.push(a.admit(extractFunctions(src('a', i)), prov({ scenario: 'a', taskId: `a_${i}` })));
    admits.push(b.admit(extractFunctions(src('b', i)), prov({ scenario: 'b', taskId: `b_${i}` })));
  }
  const outcomes = (await Promise.all(admits)).flat();
  expect(outcomes.every((o) => o.admitted)).toBe(true);
  const versions = outcomes.map((o) => (o.admitted ? o.version : 0)).sort((x, y) => x - y);
  expect(versions).toEqual(Array.from({ length: 2 * rounds }, (_, i) => i + 1));

  const stored = await b.list();
  expect(stored.map((r) => r.version)).toEqual(versions);
  // Every source survived, each exactly once, under the version its writer was told.
  expect(new Set(stored.map((r) => r.source)).size).toBe(2 * rounds);
  for (let i = 0; i < rounds; i++) {
    for (const w of ['a', 'b']) {
      expect(stored.filter((r) => r.source === src(w, i))).toHaveLength(1);
    }
  }
  const told = new Map(outcomes.map((o, i) => [o.admitted ? o.version : 0, i]));
  for (const r of stored) {
    const i = told.get(r.version) ?? -1;
    // admits alternate a, b: the outcome's index says which writer and round it was.
    expect(r.source).toBe(src(i % 2 === 0 ? 'a' : 'b', Math.floor(i / 2)));
  }

  // The same source from both sides at once: one version, the other writer is told so.
  const same = 'def pay_share(x):\n    return -x\n';
  const [ra, rb] = await Promise.all([
    a.admit(extractFunctions(same), prov()),
    b.admit(extractFunctions(same), prov()),
  ]);
  const pair = [...(ra ?? []), ...(rb ?? [])];
  expect(pair.filter((o) => o.admitted)).toEqual([
    { name: 'pay_share', admitted: true, version: 2 * rounds + 1 },
  ]);
  expect(pair.filter((o) => !o.admitted)).toEqual([
    { name: 'pay_share', admitted: false, reason: `same source as v${2 * rounds + 1}` },
  ]);
  expect(await a.list()).toHaveLength(2 * rounds + 1);
}, 120_000);
