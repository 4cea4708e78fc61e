import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const PROTO = path.resolve(__dirname, '../..');

// The built package starts its parse worker from dist/internal/parse-worker.js (the unit tests
// cover the TypeScript sources): a plain node process loads dist/ as a user of the package would.
test('the built package parses a large document in its worker thread', async () => {
  const script = `
    const proto = require(${JSON.stringify(path.join(PROTO, 'dist/index.js'))});
    const pool = require(${JSON.stringify(path.join(PROTO, 'dist/internal/parse-worker-pool.js'))});
    (async () => {
      const lines = ['tasks:'];
      for (let i = 0; i < 1500; i++) lines.push('  - {id: t' + i + ', command: echo}');
      const text = lines.join('\\n');
      if (text.length <= proto.UntrustedTextWorkerLimits.OFF_THREAD_MIN_CHARS) throw new Error('too short');
      const value = await proto.parseUntrustedTextAsync(text, { field: 'spec' });
      let error;
      try {
        await proto.parseUntrustedTextAsync(lines.join('\\n') + '\\n  - [', { field: 'spec.tasks' });
      } catch (err) {
        error = { name: err.name, code: err.code, details: err.details };
      }
      process.stdout.write(JSON.stringify({
        entry: pool.parseWorkerEntry(), tasks: value.tasks.length, error,
      }));
    })();
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], {
    timeout: 60_000,
  });
  const out = JSON.parse(stdout) as {
    entry: { entry: string; options: Record<string, unknown> };
    tasks: number;
    error: { name: string; code: string; details: { field: string; rule: string } };
  };
  expect(out.entry.entry).toBe(path.join(PROTO, 'dist/internal/parse-worker.js'));
  expect(out.entry.options).toEqual({});
  expect(out.tasks).toBe(1500);
  expect(out.error.name).toBe('TroupeError');
  expect(out.error.code).toBe('INVALID_ARGUMENT');
  expect(out.error.details.field).toBe('spec.tasks');
  expect(out.error.details.rule).toMatch(/^is not valid YAML: /);
}, 90_000);
