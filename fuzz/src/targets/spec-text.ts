import { readFileSync } from 'node:fs';
import path from 'node:path';
import { registerBuiltinDrivers } from '@troupe/benchmarks';
import {
  checkSpecSize,
  DEFAULT_MAX_SPEC_BYTES,
  DriverRegistry,
  parseSpecTextAsync,
} from '@troupe/coordinator';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { hostileJson, hostileYaml, mutatedDocument, type TextCase } from '../arbitraries';
import type { FuzzTarget } from '../fuzz-target';
import { judgeError, settled } from '../oracle';
import { repoRoot } from '../repo-root';

/** The shipped job files: valid specs of every driver, the seeds of mutations. */
export const SEED_JOB_FILES = [
  'benchmarks/suites/shell-smoke/job.yaml',
  'benchmarks/suites/bugfix-mini/job.none.yaml',
  'benchmarks/suites/desktop-mini/job.none.yaml',
  'benchmarks/suites/binpacking-or3/job.yaml',
];

/** The seed specs, parsed. */
export function seedSpecs(root: string): unknown[] {
  return SEED_JOB_FILES.map((f) => parseYaml(readFileSync(path.join(root, f), 'utf8')) as unknown);
}

/**
 * The submit path of a spec, without the store: `parseSpecTextAsync` (size, depth, aliases,
 * syntax; a large document in a worker thread), the registry's `validate` (common fields, then
 * the driver's own, which reads suite folders) and `checkSpecSize` — what `JobManager.submit`
 * runs on the coordinator. Its event-loop blocks are measured by the runner's loop monitor.
 */
export async function submitPath(registry: DriverRegistry, c: TextCase): Promise<void> {
  const spec = await registry.validate(
    await parseSpecTextAsync(c.text, c.format, DEFAULT_MAX_SPEC_BYTES),
    // No task file is stored: a spec naming one is refused naming `spec.tasks.upload`.
    { readTaskFile: async () => undefined },
  );
  checkSpecSize(spec, DEFAULT_MAX_SPEC_BYTES);
}

/**
 * (a) Job specs as YAML and JSON text through the SubmitJob path's parsing and validation, with
 * every shipped driver registered: mutations of the shipped job files and hostile documents.
 */
export const specTextTarget: FuzzTarget<TextCase> = {
  name: 'spec-text',
  description: 'job specs (YAML/JSON text) through parseSpecTextAsync and the drivers’ validate',
  async start() {
    const root = repoRoot();
    const cwd = process.cwd();
    // Suites in the seeds are relative to the checkout, as `troupe submit` run there sends them.
    process.chdir(root);
    const registry = registerBuiltinDrivers(new DriverRegistry());
    const arbitrary = fc.oneof(
      { arbitrary: mutatedDocument(seedSpecs(root), 'spec'), weight: 6 },
      { arbitrary: hostileYaml, weight: 3 },
      { arbitrary: hostileJson, weight: 1 },
    );
    const valid: TextCase = {
      text: readFileSync(path.join(root, SEED_JOB_FILES[0]!), 'utf8'),
      format: 'yaml',
      how: 'valid',
    };
    return {
      arbitrary,
      async run(c) {
        const r = await settled(submitPath(registry, c));
        if (r.error === undefined) return {};
        const wrong = judgeError(r.error, { fieldPrefix: ['spec'] });
        return wrong ? { wrong: `${c.how}: ${wrong}` } : {};
      },
      async checkValid() {
        const r = await settled(submitPath(registry, valid));
        return r.error === undefined ? undefined : (r.error as Error).message;
      },
      async stop() {
        process.chdir(cwd);
      },
    };
  },
};
