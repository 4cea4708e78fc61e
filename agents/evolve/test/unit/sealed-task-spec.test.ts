import { parseSearchTaskSpec, renderEvaluatorCommand } from '../../src/search-task-spec';

// `evaluator.sealed` in task.yaml: each phase names the candidate's folder, which must not
// overlap any grader file; the grader command gets `{submission}`.

const base = (evaluator: string, phases: string): string => `
name: sealed
description: a sealed suite
language: python
seeds: [seed.py]
direction: maximise
evaluator:
  image: python
  command: [python3, '{suite}/grade.py', '{submission}', '{phase}']
${evaluator}
phases:
${phases}
`;
const SEALED = '  sealed: { output: submission.csv }';
const PHASES = `  validation: { files: [grader/, answers/validation.csv], candidate: data/validation/ }
  test: { files: [grader/, answers/test.csv], candidate: data/test/ }`;

function refusal(text: string): string {
  try {
    parseSearchTaskSpec(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the spec was accepted');
}

test('a sealed spec parses with defaults and renders {submission}', () => {
  const spec = parseSearchTaskSpec(base(SEALED, PHASES));
  expect(spec.evaluator.sealed).toEqual({
    command: ['python3', '{program}'],
    output: 'submission.csv',
    maxOutputBytes: 262144,
  });
  expect(spec.phases.test.candidate).toBe('data/test/');
  const cmd = renderEvaluatorCommand(spec, {
    suite: '/s',
    program: '/p',
    phase: 'test',
    timeoutMs: 10_000,
    submission: '/sub/submission.csv',
  });
  expect(cmd).toEqual(['python3', '/s/grade.py', '/sub/submission.csv', 'test']);
});

test('sealed without a candidate folder is refused naming the phase', () => {
  const msg = refusal(
    base(SEALED, `  validation: { files: [grader/] }\n  test: { files: [grader/], candidate: d/ }`),
  );
  expect(msg).toContain('phases.validation.candidate');
  expect(msg).toContain('is required with evaluator.sealed');
});

test('a candidate folder without sealed is refused', () => {
  expect(refusal(base('', PHASES))).toContain('needs evaluator.sealed');
});

test('a candidate folder that holds a grader file is refused', () => {
  const msg = refusal(
    base(
      SEALED,
      `  validation: { files: [data/answers.csv], candidate: data/ }\n  test: { files: [g/], candidate: t/ }`,
    ),
  );
  expect(msg).toContain('overlaps the grader file data/answers.csv');
});

test('an output with a folder in it is refused', () => {
  const msg = refusal(base('  sealed: { output: ../answers.csv }', PHASES));
  expect(msg).toContain('evaluator.sealed.output');
});
