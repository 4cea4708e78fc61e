import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errorCode } from '@troupe/proto';
import { loadRsiSuite } from '../../src/rsi/rsi-suite';

// A desktop RSI suite (`environment: desktop`): its task ids resolve in the named desktop-tasks
// suite; an unknown id, an id in both lists or a missing desktop suite is refused naming the
// file and the field.

const REPO = path.resolve(__dirname, '../../..');
const DESKTOP_MINI = path.join(REPO, 'benchmarks/suites/desktop-mini');
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'rsi-desktop-suite-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function suite(name: string, body: string): string {
  mkdirSync(path.join(dir, name));
  writeFileSync(
    path.join(dir, name, 'tasks.yaml'),
    `environment: desktop\ndesktop: { suite: ${JSON.stringify(DESKTOP_MINI)} }\n${body}`,
  );
  return name;
}

async function refusal(name: string): Promise<string> {
  try {
    await loadRsiSuite(name, dir, 'spec.tasks');
  } catch (err) {
    expect(errorCode(err)).toBe('INVALID_ARGUMENT');
    return String(err);
  }
  throw new Error('the suite loaded');
}

test('the shipped rsi-desktop-mini suite loads desktop-mini tasks by id', async () => {
  const s = await loadRsiSuite('benchmarks/suites/rsi-desktop-mini', REPO, 'spec.tasks');
  if (s.environment !== 'desktop') throw new Error('not a desktop suite');
  expect(s.dev.map((t) => t.id)).toEqual(['write-hello']);
  expect(s.heldOut.map((t) => t.id)).toEqual(['count-lines', 'rename-report']);
  expect(s.heldOut[0]?.evaluator.getter).toEqual({ type: 'file', path: 'count.txt' });
  expect([s.desktop.kind, s.desktop.image]).toEqual(['desktop', 'troupe-desktop:latest']);
  expect(Object.keys(s.seedBank)).toEqual(['README.md']);
  expect(s.phase1Brief).toContain('Linux desktop');
});

test('an unknown task id is refused naming the list and the index', async () => {
  const msg = await refusal(suite('unknown', 'dev: [write-hello]\nheldOut: [count-lines, nope]\n'));
  expect(msg).toContain('heldOut[1]');
  expect(msg).toContain('nope');
});

test('a task in both lists is refused: dev and heldOut must be disjoint', async () => {
  const msg = await refusal(suite('overlap', 'dev: [write-hello]\nheldOut: [write-hello]\n'));
  expect(msg).toContain('heldOut[0]');
  expect(msg).toContain('disjoint');
});

test('a missing desktop suite and a bad field are refused naming them', async () => {
  mkdirSync(path.join(dir, 'missing'));
  writeFileSync(
    path.join(dir, 'missing', 'tasks.yaml'),
    'environment: desktop\ndesktop: { suite: /nonexistent }\ndev: [a]\nheldOut: [b]\n',
  );
  expect(await refusal('missing')).toContain('desktop');
  expect(await refusal(suite('kind', 'dev: [write-hello]\nheldOut: []\n'))).toContain('heldOut');
});
