import { Metadata, status } from '@grpc/grpc-js';
import { toClientError } from '@troupe/client';
import {
  type Job__Output,
  type JobEvent__Output,
  type JobResults__Output,
  TroupeError,
} from '@troupe/proto';
import { CliError, ExitCode, exitCodeOf } from '../../src/cli/exit-codes';
import { formatDuration, textTable } from '../../src/cli/format';
import { renderHtmlReport } from '../../src/cli/html-report';
import { ProgressTracker } from '../../src/cli/progress-tracker';
import { resultsTable } from '../../src/cli/results-format';

let seq = 0;
function ev(type: string, taskId = '', payload?: unknown, t = 1_000): JobEvent__Output {
  return {
    sequence: ++seq,
    jobId: 'j1',
    type: type as JobEvent__Output['type'],
    timeUnixMs: t,
    taskId,
    payloadJson: payload === undefined ? '' : JSON.stringify(payload),
    message: type,
  };
}

describe('progress tracker', () => {
  it('counts each task once, at its final event, and estimates the time left', () => {
    const p = new ProgressTracker();
    p.add(ev('JOB_STARTED', '', { total: 4 }, 0));
    p.add(ev('TASK_STARTED', 'a', {}, 0));
    p.add(ev('TASK_STARTED', 'b', {}, 0));
    expect(p.view(0)).toMatchObject({ total: 4, done: 0, running: 2 });
    expect(p.view(0).etaMs).toBeUndefined();
    p.add(ev('TASK_RETRY', 'b', { attempt: 1 }, 500));
    p.add(ev('TASK_GRADED', 'a', { status: 'PASSED' }, 1_000));
    p.add(ev('BUDGET', '', { spentUsd: 0.25 }, 1_000));
    const v = p.view(1_000);
    expect(v).toMatchObject({ done: 1, passed: 1, running: 0, spendUsd: 0.25, passRate: 1 });
    expect(v.etaMs).toBe(3_000); // 1 s per task so far, 3 left
    p.add(ev('TASK_GRADED', 'b', { status: 'TIMED_OUT' }, 2_000));
    p.add(ev('TASK_FINISHED', 'c', { status: 'ERRORED' }, 2_000));
    p.add(ev('TASK_GRADED', 'd', { status: 'FAILED' }, 2_000));
    p.add(
      ev('JOB_FINISHED', '', {
        state: 'FAILED',
        reason: '1 of 4 tasks errored',
        aggregate: { total: 4, costUsd: 0.5 },
      }),
    );
    expect(p.view()).toMatchObject({
      done: 4,
      passed: 1,
      failed: 2,
      errored: 1,
      passRate: 0.25,
      spendUsd: 0.5,
      finalState: 'FAILED',
      finalReason: '1 of 4 tasks errored',
    });
  });
});

const job: Job__Output = {
  jobId: 'j1',
  name: 'demo',
  kind: 'shell-tasks',
  state: 'SUCCEEDED',
  reason: '',
  labels: {},
  createdUnixMs: 0,
  progress: null,
  specJson: '{}',
};
const results: JobResults__Output = {
  jobId: 'j1',
  state: 'SUCCEEDED',
  aggregate: {
    total: 2,
    passed: 1,
    failed: 1,
    errored: 0,
    timedOut: 0,
    cancelled: 0,
    pending: 0,
    passRate: 0.5,
    costUsd: 0,
    promptTokens: 0,
    completionTokens: 0,
    wallMs: 1_500,
    extraJson: '',
  },
  tasks: [
    {
      taskId: 'ok',
      status: 'TASK_PASSED',
      score: 1,
      attempts: 1,
      costUsd: 0,
      tokens: 0,
      durationMs: 120,
      stopReason: 'exit',
      error: '',
      artifacts: [],
      detailsJson: '',
    },
    {
      taskId: '<img src=x onerror=alert(1)>',
      status: 'TASK_FAILED',
      score: 0,
      attempts: 2,
      costUsd: 0,
      tokens: 0,
      durationMs: 3_400,
      stopReason: 'exit',
      error: 'exit "4" & <more>',
      artifacts: [],
      detailsJson: '',
    },
  ],
  nextPageToken: '',
};

describe('results rendering', () => {
  it('prints an aligned table with a summary', () => {
    const text = resultsTable(job, results);
    expect(text).toContain('job j1  demo (shell-tasks)  SUCCEEDED');
    expect(text).toContain('TIME   COST     TOKENS  STOP  ERROR');
    expect(text).toContain(
      `\nok${' '.repeat(28)}passed  1      1         120ms  $0.0000  0       exit\n`,
    );
    expect(text).toContain('pass rate 50.0%');
  });

  it('renders a self-contained HTML report with a chart per task and escapes everything', () => {
    const html = renderHtmlReport(job, results);
    expect(html.match(/<svg /g)).toHaveLength(3);
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('exit &quot;4&quot; &amp; &lt;more&gt;');
    expect(html).not.toMatch(/<script|src="|href=/);
  });

  it("lists each task's artifacts, as links when they were copied beside the report", () => {
    const withLinks = {
      ...results,
      tasks: [
        {
          ...results.tasks[0]!,
          artifacts: ['jobs/j1/tasks/ok/workspace.tar'],
          detailsJson: JSON.stringify({
            links: {
              trajectory: 'jobs/j1/tasks/ok/trajectory.jsonl',
              graderStdout: 'jobs/j1/tasks/ok/grade-x/stdout.log',
              workspace: 'jobs/j1/tasks/ok/workspace.tar',
            },
          }),
        },
      ],
    };
    const plain = renderHtmlReport(job, withLinks);
    expect(plain).toContain('<span title="jobs/j1/tasks/ok/trajectory.jsonl">trajectory</span>');
    expect(plain).not.toContain('href=');
    const linked = renderHtmlReport(job, withLinks, {
      artifactHref: (p) =>
        p.endsWith('.jsonl') ? `report.html.files/ok/${p.split('/').pop()}` : undefined,
    });
    expect(linked).toContain('<a href="report.html.files/ok/trajectory.jsonl">trajectory</a>');
    expect(linked).toContain('graderStdout</span>');
    expect(linked.match(/workspace/g)).toHaveLength(2); // listed once (title and name), not twice
  });

  it('formats durations and tables', () => {
    expect([850, 12_340, 245_000, 7_380_000].map(formatDuration)).toEqual([
      '850ms',
      '12.3s',
      '4m05s',
      '2h03m',
    ]);
    expect(textTable(['A', 'LONGER'], [['xyz', '1']])).toBe('A    LONGER\nxyz  1');
  });
});

describe('exit codes and errors', () => {
  it('maps errors to the documented exit codes', () => {
    expect(exitCodeOf(new TroupeError('INVALID_ARGUMENT', 'x'))).toBe(ExitCode.INVALID);
    expect(exitCodeOf(new TroupeError('NOT_FOUND', 'x'))).toBe(ExitCode.NOT_FOUND);
    expect(exitCodeOf(new TroupeError('UNAUTHENTICATED', 'x'))).toBe(ExitCode.AUTH);
    expect(exitCodeOf(new TroupeError('UNAVAILABLE', 'x'))).toBe(ExitCode.UNAVAILABLE);
    expect(exitCodeOf(new TroupeError('INTERNAL', 'x'))).toBe(ExitCode.ERROR);
    expect(exitCodeOf(new CliError('x', ExitCode.JOB_NOT_COMPLETED))).toBe(1);
  });

  it('reads a transport size refusal as INVALID_ARGUMENT, a Troupe budget error as itself', () => {
    const transport = Object.assign(new Error('Received message larger than max'), {
      code: status.RESOURCE_EXHAUSTED,
      details: 'Received message larger than max (5000000 vs. 4194304)',
      metadata: new Metadata(),
    });
    expect(toClientError(transport, 'h:1').code).toBe('INVALID_ARGUMENT');
    const md = new Metadata();
    md.set('troupe-error-code', 'BUDGET_EXHAUSTED');
    const budget = Object.assign(new Error('budget'), {
      code: status.RESOURCE_EXHAUSTED,
      details: 'budget',
      metadata: md,
    });
    expect(toClientError(budget, 'h:1').code).toBe('BUDGET_EXHAUSTED');
  });
});
