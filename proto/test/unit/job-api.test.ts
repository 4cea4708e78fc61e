import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  type Job,
  JOB_API_LOADER_OPTIONS,
  JOB_API_PROTO_FILE,
  jobApiIncludeDir,
  JobEventType,
  JobState,
  loadJobApi,
  type TaskResult,
} from '@troupe/proto';

const PACKAGE_ROOT = path.resolve(__dirname, '..', '..');
const GEN_SCRIPT = path.join(PACKAGE_ROOT, 'scripts', 'gen-types.js');

function runGen(args: string[], script = GEN_SCRIPT, env: NodeJS.ProcessEnv = process.env) {
  return spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', env });
}

describe('loadJobApi', () => {
  it('finds the .proto next to the package root and loads it once', () => {
    expect(jobApiIncludeDir()).toBe(PACKAGE_ROOT);
    expect(fs.existsSync(path.join(jobApiIncludeDir(), JOB_API_PROTO_FILE))).toBe(true);
    expect(loadJobApi()).toBe(loadJobApi());
  });

  it('exposes JobService and NodeService with their methods and streaming shapes', () => {
    const api = loadJobApi();
    const jobs = api.JobService.service;
    expect(Object.keys(jobs).sort()).toEqual(
      [
        'CancelJob',
        'DeleteJob',
        'GetArtifact',
        'GetBudget',
        'GetJob',
        'GetResults',
        'GetRollouts',
        'ListJobs',
        'Rollout',
        'SubmitJob',
        'UploadTaskFile',
        'WatchJob',
        'WatchJobs',
        'WatchBudget',
      ].sort(),
    );
    expect(jobs.SubmitJob.path).toBe('/troupe.v1.JobService/SubmitJob');
    expect([jobs.WatchJob.requestStream, jobs.WatchJob.responseStream]).toEqual([false, true]);
    expect([jobs.GetArtifact.requestStream, jobs.GetArtifact.responseStream]).toEqual([
      false,
      true,
    ]);
    expect([jobs.SubmitJob.requestStream, jobs.SubmitJob.responseStream]).toEqual([false, false]);
    expect([jobs.Rollout.requestStream, jobs.Rollout.responseStream]).toEqual([false, false]);
    expect([jobs.UploadTaskFile.requestStream, jobs.UploadTaskFile.responseStream]).toEqual([
      true,
      false,
    ]);
    expect([jobs.WatchJobs.requestStream, jobs.WatchJobs.responseStream]).toEqual([false, true]);
    expect([jobs.WatchBudget.requestStream, jobs.WatchBudget.responseStream]).toEqual([
      false,
      true,
    ]);
    const nodes = api.NodeService.service;
    expect(Object.keys(nodes).sort()).toEqual(['DrainNode', 'ListNodes', 'WatchNodes']);
    expect([nodes.WatchNodes.requestStream, nodes.WatchNodes.responseStream]).toEqual([
      false,
      true,
    ]);
    expect(api.grpc.troupe.v1.JobService).toBe(api.JobService);
    expect(Object.keys(api.packageDefinition)).toContain('troupe.v1.Job');
  });

  it('decodes with the generated types: numbers for int64, enum names, defaults, optional presence', () => {
    const { GetJob } = loadJobApi().JobService.service;
    const sent: Job = {
      jobId: 'j1',
      state: 'RUNNING',
      labels: { team: 'evals' },
      createdUnixMs: 1_767_225_600_123,
      startedUnixMs: '1767225600456',
      progress: { total: 10, done: 3, costUsd: 0.25 },
    };
    const got = GetJob.responseDeserialize(GetJob.responseSerialize(sent));
    expect(got.jobId).toBe('j1');
    expect(got.state).toBe(JobState.RUNNING);
    expect(got.createdUnixMs).toBe(1_767_225_600_123);
    expect(got.startedUnixMs).toBe(1_767_225_600_456);
    expect('finishedUnixMs' in got).toBe(false);
    expect(got.name).toBe('');
    expect(got.reason).toBe('');
    expect(got.labels).toEqual({ team: 'evals' });
    expect(got.progress).toMatchObject({ total: 10, done: 3, passed: 0, costUsd: 0.25 });

    const { GetResults } = loadJobApi().JobService.service;
    const ungraded: TaskResult = { taskId: 't1', status: 'TASK_ERRORED' };
    const graded: TaskResult = { taskId: 't2', status: 'TASK_FAILED', score: 0 };
    const results = GetResults.responseDeserialize(
      GetResults.responseSerialize({ jobId: 'j1', tasks: [ungraded, graded] }),
    );
    expect(results.tasks[0]!.score).toBeUndefined();
    expect(results.tasks[1]!.score).toBe(0); // presence kept: 0 is a real score
    expect(results.tasks[0]!.artifacts).toEqual([]);
    expect(results.aggregate).toBeNull();
    expect(results.state).toBe('JOB_STATE_UNSPECIFIED');
  });

  it('exports the enums as values', () => {
    expect(JobState.SUCCEEDED).toBe('SUCCEEDED');
    expect(JobEventType.JOB_FINISHED).toBe('JOB_FINISHED');
  });
});

describe('generated code', () => {
  it('uses the same options as the runtime loader', () => {
    const printed = runGen(['--print-options']);
    expect(printed.status).toBe(0);
    const genOptions = JSON.parse(printed.stdout) as Record<string, unknown>;
    const loaderOptions = Object.fromEntries(
      Object.entries(JOB_API_LOADER_OPTIONS).map(([k, v]) => [
        k,
        typeof v === 'function' ? v.name : v,
      ]),
    );
    expect(genOptions).toEqual(loaderOptions);
  });

  it('is up to date with the .proto files (npm run check)', () => {
    const result = runGen(['--check']);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });

  it('the check fails with a clear message when a .proto changed without regenerating', () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'troupe-proto-stale-'));
    try {
      for (const dir of ['scripts', 'troupe', path.join('src', 'generated')]) {
        fs.cpSync(path.join(PACKAGE_ROOT, dir), path.join(tmp, dir), { recursive: true });
      }
      const proto = path.join(tmp, JOB_API_PROTO_FILE);
      fs.appendFileSync(proto, '\nmessage BrandNew {\n  string field = 1;\n}\n');
      const result = runGen(['--check'], path.join(tmp, 'scripts', 'gen-types.js'), {
        ...process.env,
        NODE_PATH: path.resolve(PACKAGE_ROOT, '..', 'node_modules'),
      });
      expect(result.status).toBe(1);
      expect(result.stderr).toContain('src/generated is stale');
      expect(result.stderr).toContain('missing: src/generated/troupe/v1/BrandNew.ts');
      expect(result.stderr).toContain('changed: src/generated/jobs.ts');
      expect(result.stderr).toContain('npm run gen');
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  it('ships the .proto files with the package', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as {
      files: string[];
    };
    expect(pkg.files).toEqual(expect.arrayContaining(['dist', 'troupe']));
  });
});
