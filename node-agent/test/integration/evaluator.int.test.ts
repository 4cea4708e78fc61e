import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Evaluator } from '@troupe/node-agent';
import { makeTempDir, type TempDir } from '@troupe/testkit';
import tar from 'tar-stream';
import { dockerFixture, HOST, leftovers, removeLeftovers, type DockerFixture } from './helpers';

async function tarOf(files: Record<string, { content: string; mode?: number }>): Promise<Buffer> {
  const pack = tar.pack();
  for (const [name, f] of Object.entries(files)) {
    pack.entry({ name, mode: f.mode ?? 0o644 }, Buffer.from(f.content));
  }
  pack.finalize();
  const chunks: Buffer[] = [];
  for await (const c of pack as unknown as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** The hidden grader: solution.sh must print 42; writes a score report; shows its owner. */
const GRADER = [
  'set -u',
  'echo "grader owner: $(stat -c %u "$GRADER_DIR/run-tests.sh")"',
  'out=$(sh ./solution.sh 2>&1)',
  'if [ "$out" = 42 ]; then',
  '  echo \'{"score": 1, "passed": 1, "total": 1}\' > "$GRADER_REPORT_FILE"; echo "PASSED test_answer"',
  'else',
  '  echo \'{"score": 0, "passed": 0, "total": 1}\' > "$GRADER_REPORT_FILE"; echo "FAILED test_answer: got $out"',
  'fi',
].join('\n');

describe('Evaluator (Docker)', () => {
  let fx: DockerFixture;
  let evaluator: Evaluator;
  let graderDir: TempDir;

  beforeAll(async () => {
    fx = await dockerFixture();
    evaluator = new Evaluator({
      backend: fx.backend,
      labels: { cluster: fx.cluster, host: HOST, actor: 'evaluator/e1', job: 'job-1' },
      defaultTimeoutMs: 60_000,
    });
    graderDir = await makeTempDir('troupe-grader-');
    await mkdir(path.join(graderDir.path, 'lib'));
    await writeFile(path.join(graderDir.path, 'run-tests.sh'), GRADER, { mode: 0o755 });
    await writeFile(path.join(graderDir.path, 'lib', 'helper.txt'), 'unused');
  });

  afterAll(async () => {
    await graderDir.cleanup();
    await fx.backend.close();
    await removeLeftovers(fx.docker, fx.cluster);
  });

  test('a correct workspace passes, with the score from the report and a stable grader digest', async () => {
    const workspaceTar = await tarOf({ 'solution.sh': { content: 'echo 42\n' } });
    const a = await evaluator.grade({
      workspaceTar,
      graderFiles: graderDir.path,
      image: fx.busybox,
      command: ['sh', '/grader/run-tests.sh'],
    });
    expect(a).toMatchObject({ status: 'passed', score: 1, exitCode: 0 });
    expect(a.report).toEqual({ score: 1, passed: 1, total: 1 });
    expect(a.logs.stdout).toContain('PASSED test_answer');
    expect(a.logs.stdout).toContain('grader owner: 0');
    expect(a.stdoutTail).toBe(a.logs.stdout);
    expect(a.graderDigest).toMatch(/^[0-9a-f]{64}$/);
    const b = await evaluator.grade({
      workspaceTar,
      graderFiles: graderDir.path,
      image: fx.busybox,
      command: ['sh', '/grader/run-tests.sh'],
    });
    expect(b.graderDigest).toBe(a.graderDigest);
  });

  test('a workspace carrying files named like the grader cannot change the grade', async () => {
    const cheat =
      'echo \'{"score": 1}\' > "$GRADER_REPORT_FILE" 2>/dev/null; echo PASSED; exit 0\n';
    const workspaceTar = await tarOf({
      // Wrong answer, plus every trick a workspace can play with names and paths.
      'solution.sh': {
        content: [
          'cp ./run-tests.sh /grader/run-tests.sh 2>/dev/null',
          'echo "exit 0" >> /grader/run-tests.sh 2>/dev/null',
          'rm -f /grader/run-tests.sh 2>/dev/null',
          'echo 41',
        ].join('\n'),
      },
      'run-tests.sh': { content: cheat, mode: 0o755 },
      'grader/run-tests.sh': { content: cheat, mode: 0o755 },
      '.troupe-grade.json': { content: '{"score": 1}' },
      'grader-out/report.json': { content: '{"score": 1}' },
    });
    const graderTar = await tarOf({ 'run-tests.sh': { content: GRADER, mode: 0o755 } });
    const grade = await evaluator.grade({
      workspaceTar,
      graderFiles: graderTar,
      image: fx.busybox,
      command: ['sh', '/grader/run-tests.sh'],
    });
    expect(grade.status).toBe('failed');
    expect(grade.score).toBe(0);
    expect(grade.logs.stdout).toMatch(/^FAILED test_answer: got .*Permission denied/m);
    expect(grade.logs.stdout).toMatch(/^41$/m);
    expect(grade.graderDigest).toBe(sha256(graderTar));
  });

  test('the grader cannot be modified from inside the sandbox', async () => {
    const graderTar = await tarOf({
      'run-tests.sh': {
        content:
          'ls -ld /grader; echo x >> /grader/run-tests.sh && echo MODIFIED; touch /grader/new && echo CREATED; echo FAILED-never-printed-if-ok | head -c 0',
        mode: 0o755,
      },
    });
    const grade = await evaluator.grade({
      workspaceTar: await tarOf({ 'a.txt': { content: 'a' } }),
      graderFiles: graderTar,
      image: fx.busybox,
      command: ['sh', '/grader/run-tests.sh'],
    });
    expect(grade.logs.stdout).not.toContain('MODIFIED');
    expect(grade.logs.stdout).not.toContain('CREATED');
    expect(grade.logs.stderr).toMatch(/Permission denied/);
    expect(grade.status).toBe('passed'); // exit 0 and no FAILED line at the start of a line
    expect(grade.score).toBeUndefined();
  });

  test('exit 0 with a FAILED line fails; a hang times out; a missing grader is an error', async () => {
    const workspaceTar = await tarOf({ 'a.txt': { content: 'a' } });
    const failedLine = await evaluator.grade({
      workspaceTar,
      graderFiles: await tarOf({ 't.sh': { content: 'echo "FAILED test_x"; exit 0' } }),
      image: fx.busybox,
      command: ['sh', '/grader/t.sh'],
    });
    expect(failedLine).toMatchObject({ status: 'failed', exitCode: 0 });

    const hang = await evaluator.grade({
      workspaceTar,
      graderFiles: await tarOf({ 't.sh': { content: 'trap "" TERM; sleep 1000' } }),
      image: fx.busybox,
      command: ['sh', '/grader/t.sh'],
      timeoutMs: 1_000,
    });
    expect(hang.status).toBe('timeout');

    const missing = await evaluator.grade({
      workspaceTar,
      graderFiles: await tarOf({ 't.sh': { content: 'exit 0' } }),
      image: fx.busybox,
      // The default command needs bash, which the busybox image does not have.
    });
    expect(missing.status).toBe('error');
    expect(missing.error).toContain('could not run');
  });

  test('grading sandboxes are fresh each time and removed afterwards', async () => {
    const first = await evaluator.grade({
      workspaceTar: await tarOf({ 'solution.sh': { content: 'echo 42; touch /workspace/marker' } }),
      graderFiles: graderDir.path,
      image: fx.busybox,
      command: ['sh', '-c', 'sh /grader/run-tests.sh; ls /workspace'],
    });
    expect(first.logs.stdout).toContain('marker');
    const second = await evaluator.grade({
      workspaceTar: await tarOf({ 'solution.sh': { content: 'echo 42' } }),
      graderFiles: graderDir.path,
      image: fx.busybox,
      command: ['sh', '-c', 'sh /grader/run-tests.sh; ls /workspace'],
    });
    expect(second.logs.stdout).not.toContain('marker');
    expect(await leftovers(fx.docker, fx.cluster)).toEqual({ containers: [], volumes: [] });
  });
});
