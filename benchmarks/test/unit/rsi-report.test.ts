import type { BankVersion, Phase2Result, Phase3Result, WaveRecord } from '@troupe/rsi';
import { renderRsiReport } from '../../src/rsi/rsi-report';

// The report's per-cycle view rendered from a realistic study: a Phase-1 wave with a committed
// and a refused branch, a development task that failed, practised and passed (with a refused
// lesson), one whose record predates the per-cycle log, and Phase 3. Model-written text carries
// markup that must come out escaped.

const h = (c: string) => c.repeat(64);
const v = (version: number, c: string): BankVersion => ({
  version,
  commitHash: h(String.fromCharCode(c.charCodeAt(0) + 1)),
  treeHash: h(c),
});

const seed = v(1, 'a');
const wave1: WaveRecord = {
  wave: 1,
  input: seed,
  output: v(2, 'b'),
  branches: [
    {
      index: 1,
      project: 'practice/p1',
      status: 'practised',
      verdict: 'PASS',
      changed: ['lessons/p1.md'],
      committed: true,
      report: 'HANDOFF\nout.txt holds <both> lines',
      bankBefore: h('a'),
      bankAfter: h('c'),
    },
    {
      index: 2,
      project: 'practice/p2',
      status: 'practised',
      verdict: 'FAIL',
      changed: ['lessons/p1.md'],
      committed: false,
      refused: 'changes lessons/p1.md, which an earlier branch of the wave changed',
      report: 'n.txt is missing',
      bankBefore: h('a'),
      bankAfter: h('d'),
    },
  ],
};

const phase2: Phase2Result = {
  tasks: [
    {
      taskId: 'greeting',
      position: 1,
      status: 'passed',
      verdict: 'PASS',
      attempts: 2,
      projects: 1,
      refusedPublications: 0,
      bankIn: v(2, 'b'),
      bankOut: v(3, 'e'),
      log: {
        attempts: [
          {
            attempt: 1,
            final: false,
            verdict: 'FAIL',
            report: 'greeting.txt says <script>alert(1)</script>',
            bankBefore: h('b'),
            bankAfter: h('b'),
            learningRefused: 'changes[0].path: path must not contain ".." segments',
          },
          {
            attempt: 2,
            final: false,
            verdict: 'PASS',
            report: 'greeting.txt holds hello',
            bankBefore: h('f'),
            bankAfter: h('e'),
          },
        ],
        projects: [
          {
            index: 1,
            attempt: 1,
            project: 'practice/echo',
            verdict: 'PASS',
            report: 'echo.txt is right',
            bankBefore: h('b'),
            bankAfter: h('f'),
          },
        ],
      },
    },
    {
      taskId: 'count-lines',
      position: 2,
      status: 'final_attempt',
      verdict: 'FAIL',
      attempts: 1,
      projects: 0,
      refusedPublications: 0,
      bankIn: v(3, 'e'),
      bankOut: v(3, 'e'),
    },
  ],
  frozen: { bankId: 'rsi-job1', ...v(3, 'e'), devTaskIds: ['greeting', 'count-lines'] },
};

const phase3: Phase3Result = {
  frozen: phase2.frozen,
  tasks: [
    { taskId: 'farewell', bankTreeHash: h('e'), status: 'scored', score: 0, detail: 'x' },
    { taskId: 'count-words', bankTreeHash: h('e'), status: 'unscored', reason: 'sandbox <gone>' },
  ],
  scored: 1,
  unscored: 1,
  meanScore: 0,
};

const html = renderRsiReport({
  jobId: 'job1',
  bankId: 'rsi-job1',
  seed,
  phase1: { output: v(2, 'b'), waves: 1, ended: 'READY' },
  waves: [wave1],
  phase2,
  phase3,
});

/** The rows of the table that follows `heading`. */
function rowsAfter(heading: string): string[] {
  const at = html.indexOf(heading);
  expect(at).toBeGreaterThanOrEqual(0);
  const table = html.slice(at, html.indexOf('</table>', at));
  return table.split('<tr>').slice(2);
}

test('the lineage runs seed → Phase 1 output → frozen', () => {
  expect(html).toContain(`seed <code>v1 ${h('a').slice(0, 12)}</code>`);
  expect(html).toContain(`Phase 1 output <code>v2 ${h('b').slice(0, 12)}</code> (READY)`);
  expect(html).toContain(`frozen <code>v3 ${h('e').slice(0, 12)}</code>`);
});

test('each Phase-1 wave lists its branches with verdict, report, lessons and commit', () => {
  expect(html).toContain('Phase 1: practice waves — 1 committed, ended READY');
  const rows = rowsAfter('<h3>Wave 1:');
  expect(rows).toHaveLength(2);
  expect(rows[0]).toContain('practice/p1');
  expect(rows[0]).toContain('<span class="pass">PASS</span>');
  expect(rows[0]).toContain('out.txt holds &lt;both&gt; lines');
  expect(rows[0]).toContain(`${h('a').slice(0, 12)} → ${h('c').slice(0, 12)}`);
  expect(rows[0]).toContain('>committed<');
  expect(rows[1]).toContain('<span class="fail">FAIL</span>');
  expect(rows[1]).toContain(
    'not committed: changes lessons/p1.md, which an earlier branch of the wave changed',
  );
});

test('each development task shows every cycle with the projects its search practised', () => {
  const rows = rowsAfter('<h3>1. greeting — passed</h3>');
  expect(rows).toHaveLength(3);
  // Attempt 1: FAIL, its report escaped, its lesson refused with the reason.
  expect(rows[0]).toContain('attempt 1');
  expect(rows[0]).toContain('<span class="fail">FAIL</span>');
  expect(rows[0]).toContain('greeting.txt says &lt;script&gt;alert(1)&lt;/script&gt;');
  expect(rows[0]).toContain(
    'refused: changes[0].path: path must not contain &quot;..&quot; segments',
  );
  // The project attempt 1's search ran, its lesson admitted (bank b → f).
  expect(rows[1]).toContain('project 1: <code>practice/echo</code>');
  expect(rows[1]).toContain('>admitted<');
  expect(rows[1]).toContain(`${h('b').slice(0, 12)} → ${h('f').slice(0, 12)}`);
  // Attempt 2: PASS on the practised bank, its lesson admitted (f → e).
  expect(rows[2]).toContain('attempt 2');
  expect(rows[2]).toContain('<span class="pass">PASS</span>');
  expect(rows[2]).toContain(`${h('f').slice(0, 12)} → ${h('e').slice(0, 12)}`);
  // A record without the log (written before it existed) says so instead of failing.
  expect(html).toContain('<h3>2. count-lines</h3>\n<p>No per-cycle log in this record.</p>');
});

test('no model-written markup survives unescaped', () => {
  expect(html).not.toContain('<script>');
  expect(html).not.toContain('<both>');
  expect(html).toContain('sandbox &lt;gone&gt;');
});

test('a study without practice waves says the seed went to Phase 2', () => {
  const plain = renderRsiReport({
    jobId: 'job2',
    bankId: 'rsi-job2',
    phase1: { output: seed, waves: 0, ended: 'max_waves' },
    phase2,
    phase3,
  });
  expect(plain).toContain("No practice wave ran: the seed is Phase 2's input.");
});
