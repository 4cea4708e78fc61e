import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { type SearchTaskSpec, SearchTaskSpecSchema } from '@troupe/evolve';
import { errorCode, parseUntrustedText, parseWith, TroupeError } from '@troupe/proto';
import { z } from 'zod';
import { MLE_GRADER_HARNESS } from './mle-grader-harness';
import { MAX_SUITE_BYTES, type SuiteBundle } from './suite-bundle';

/** The file that marks an MLE-bench competition folder. */
export const MLE_CONFIG_FILE = 'config.yaml';
/** Largest single data file a competition may have (the bundle limit applies on top). */
const MAX_DATA_FILE_BYTES = 4 * 1024 * 1024;

const relativeFile = z
  .string({ error: 'must be a path (string)' })
  .min(1, { error: 'must not be empty' })
  .refine((p) => !path.isAbsolute(p) && !p.split(/[\\/]/).includes('..'), {
    error: 'must be a path inside the competition folder (relative, no ..)',
  });
const score = z.number({ error: 'must be a number' }).refine(Number.isFinite, {
  error: 'must be finite',
});

/**
 * A competition's `config.yaml`, as MLE-bench writes it (`id`, `name`, `competition_type`,
 * `description`, `dataset.{answers,sample_submission}`, `grader.{name,grade_fn}`, `preparer`),
 * with the metric's direction (`grader.is_lower_better`), the medal thresholds (MLE-bench takes
 * them from a leaderboard; here they come from a documented baseline sweep) and Troupe's search
 * settings (`troupe`). Paths are relative to the competition folder; `grade_fn` and `preparer`
 * name a Python file and function (`grade.py:grade`, `prepare.py:prepare`).
 */
export const MleCompetitionConfigSchema = z
  .object({
    id: z
      .string({ error: 'must be a string' })
      .regex(/^[a-z0-9][a-z0-9-]{0,63}$/, { error: 'must match [a-z0-9][a-z0-9-]{0,63}' }),
    name: z.string({ error: 'must be a string' }).min(1, { error: 'must not be empty' }),
    competition_type: z.string().default('simple'),
    awards_medals: z.boolean({ error: 'must be a boolean' }).default(true),
    prizes: z.unknown().optional(),
    description: relativeFile,
    dataset: z.object({ answers: relativeFile, sample_submission: relativeFile }).strict(),
    grader: z
      .object({
        name: z.string({ error: 'must be a string (the metric)' }).min(1),
        grade_fn: z
          .string({ error: 'must be a string' })
          .regex(/^[^:]+\.py:grade$/, { error: 'must be <file>.py:grade' }),
        is_lower_better: z.boolean({ error: 'must be a boolean (the metric direction)' }),
      })
      .strict(),
    preparer: z
      .string({ error: 'must be a string' })
      .regex(/^[^:]+\.py:prepare$/, { error: 'must be <file>.py:prepare' }),
    thresholds: z.object({ gold: score, silver: score, bronze: score, median: score }).strict(),
    troupe: z
      .object({
        /** Seed program (Python), relative to the competition folder. */
        seed: relativeFile,
        /** Sandbox image of both sandboxes. @default python */
        image: z
          .string()
          .regex(/^[a-z0-9][a-z0-9-]*$/)
          .default('python'),
        /** Evaluation deadline (program + grading), ms. @default 120000 */
        timeoutMs: z.number().int().positive().default(120_000),
        memoryMb: z.number().int().positive().default(1024),
        /** Share of the public training rows held out as the search's validation phase. */
        validationFraction: z.number().gt(0).lt(1).default(0.2),
        maxOutputBytes: z
          .number()
          .int()
          .positive()
          .max(4 * 1024 * 1024)
          .default(256 * 1024),
        /** Limits and search defaults (as a suite's `limits:` / `search:`). */
        limits: z.record(z.string(), z.unknown()).optional(),
        search: z.record(z.string(), z.unknown()).optional(),
      })
      .strict(),
  })
  .strict();
/** A parsed competition `config.yaml`. */
export type MleCompetitionConfig = z.output<typeof MleCompetitionConfigSchema>;

/** The thresholds of a medal table, and where a score lands in it. */
export type Medal = 'gold' | 'silver' | 'bronze' | 'above_median' | 'none';

function refused(field: string, file: string, rule: string): TroupeError {
  return new TroupeError('INVALID_ARGUMENT', `\`${field}\`: ${file}: ${rule}`, {
    details: { field, rule, file },
  });
}

async function readText(field: string, file: string, what: string): Promise<string> {
  let size: number;
  try {
    const st = await stat(file);
    if (!st.isFile()) throw new Error('not a file');
    size = st.size;
  } catch {
    throw refused(field, file, `${what} is missing`);
  }
  if (size > MAX_DATA_FILE_BYTES) {
    throw refused(field, file, `${what} is larger than ${MAX_DATA_FILE_BYTES} bytes`);
  }
  return await readFile(file, 'utf8');
}

/** A CSV read line by line (one record a line, no quoted fields: what `prepare` writes). */
interface Table {
  header: string[];
  rows: string[][];
}

function parseCsv(field: string, file: string, text: string, what: string): Table {
  const lines = text.split(/\r?\n/).filter((l) => l.length > 0);
  if (lines.length < 2) throw refused(field, file, `${what} needs a header and at least one row`);
  if (text.includes('"')) {
    throw refused(field, file, `${what}: quoted CSV fields are not supported (one record a line)`);
  }
  const header = lines[0]!.split(',').map((h) => h.trim());
  const rows = lines.slice(1).map((line, i) => {
    const row = line.split(',');
    if (row.length !== header.length) {
      throw refused(
        field,
        file,
        `${what} line ${i + 2}: expected ${header.length} fields, got ${row.length}`,
      );
    }
    return row;
  });
  return { header, rows };
}

function csvText(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [header, ...rows].map((r) => r.join(',')).join('\n') + '\n';
}

/** Whether `id` falls in the held-out validation share (a hash of the id: no RNG, stable). */
function heldOut(id: string, fraction: number): boolean {
  const h = createHash('sha256').update(id).digest().readUInt32BE(0);
  return h / 0x1_0000_0000 < fraction;
}

/**
 * Loads an MLE-bench competition folder (`config.yaml`, its description, `prepare.py`,
 * `grade.py`, the prepared `public/` files — `train.csv`, `test.csv`, `sample_submission.csv` —
 * and the private answers) as an evolve suite with sealed grading:
 *
 * - test phase: the candidate gets the public files; the grader gets the private answers;
 * - validation phase (what the search optimises): a share of the public training rows, chosen by
 *   a hash of their id, is held out; the candidate trains on the rest and predicts those, the
 *   grader alone gets their targets.
 *
 * The candidate runs `python3 program.py` in a folder holding `train.csv`, `test.csv` and
 * `sample_submission.csv` and writes `submission.csv`; the harness checks it and calls the
 * competition's `grade(submission, answers)` in the grader sandbox.
 * @throws TroupeError `INVALID_ARGUMENT` on `field`, naming the file (`details.file`) that is
 *   missing or broken
 */
export async function loadMleCompetition(
  dir: string,
  field: string,
  cwd: string = process.cwd(),
): Promise<SuiteBundle> {
  const suiteDir = path.resolve(cwd, dir);
  const configFile = path.join(suiteDir, MLE_CONFIG_FILE);
  const configText = await readText(field, configFile, 'the competition config');
  let config: MleCompetitionConfig;
  try {
    config = parseWith(
      MleCompetitionConfigSchema,
      parseUntrustedText(configText, { field: 'config.yaml' }),
      { prefix: 'config.yaml' },
    );
  } catch (err) {
    if (errorCode(err) !== 'INVALID_ARGUMENT') throw err;
    throw refused(field, configFile, (err as Error).message);
  }
  const at = (rel: string): string => path.join(suiteDir, rel);
  const lower = config.grader.is_lower_better;
  const t = config.thresholds;
  const ordered = lower
    ? t.gold <= t.silver && t.silver <= t.bronze && t.bronze <= t.median
    : t.gold >= t.silver && t.silver >= t.bronze && t.bronze >= t.median;
  if (!ordered) {
    throw refused(
      field,
      configFile,
      `thresholds must run gold, silver, bronze, median from best to worst (${lower ? 'lower' : 'higher'} is better)`,
    );
  }
  const description = await readText(field, at(config.description), 'the description');
  const graderFile = config.grader.grade_fn.split(':')[0]!;
  const grader = await readText(field, at(graderFile), 'the grader (grader.grade_fn)');
  if (!/^def grade\(/m.test(grader)) {
    throw refused(
      field,
      at(graderFile),
      'the grader defines no top-level grade(submission, answers)',
    );
  }
  await readText(field, at(config.preparer.split(':')[0]!), 'the prepare step (preparer)');
  const seed = await readText(field, at(config.troupe.seed), 'the seed program (troupe.seed)');
  const sampleFile = at(config.dataset.sample_submission);
  const publicDir = path.dirname(sampleFile);
  const hint = `run the prepare step (${config.preparer}) first`;
  const load = async (file: string, what: string): Promise<Table> => {
    try {
      await stat(file);
    } catch {
      throw refused(field, file, `${what} is missing: ${hint}`);
    }
    return parseCsv(field, file, await readText(field, file, what), what);
  };
  const sample = await load(sampleFile, 'the sample submission');
  const train = await load(path.join(publicDir, 'train.csv'), 'the public train.csv');
  const test = await load(path.join(publicDir, 'test.csv'), 'the public test.csv');
  const answersFile = at(config.dataset.answers);
  const answers = await load(answersFile, 'the private answers');

  const idColumn = sample.header[0]!;
  const targets = answers.header.filter((h) => h !== idColumn);
  if (answers.header[0] !== idColumn || targets.length === 0) {
    throw refused(
      field,
      answersFile,
      `the answers' header must be ${idColumn} and the target column(s), got ${answers.header.join(',')}`,
    );
  }
  const targetIdx = targets.map((c) => {
    const i = train.header.indexOf(c);
    if (i < 0) throw refused(field, path.join(publicDir, 'train.csv'), `has no target column ${c}`);
    return i;
  });
  const trainIdIdx = train.header.indexOf(idColumn);
  if (trainIdIdx < 0) {
    throw refused(field, path.join(publicDir, 'train.csv'), `has no id column ${idColumn}`);
  }
  for (const c of targets) {
    if (test.header.includes(c)) {
      throw refused(field, path.join(publicDir, 'test.csv'), `holds the target column ${c}`);
    }
  }
  const testIds = new Set(test.rows.map((r) => r[0]));
  const answerIds = answers.rows.map((r) => r[0]);
  if (answerIds.length !== testIds.size || answerIds.some((id) => !testIds.has(id))) {
    throw refused(field, answersFile, 'the answers and the public test.csv must hold the same ids');
  }

  // The validation phase: held-out training rows, their targets for the grader only.
  const fraction = config.troupe.validationFraction;
  const held = train.rows.filter((r) => heldOut(r[trainIdIdx]!, fraction));
  const kept = train.rows.filter((r) => !heldOut(r[trainIdIdx]!, fraction));
  if (held.length === 0 || kept.length === 0) {
    throw refused(
      field,
      path.join(publicDir, 'train.csv'),
      'too few rows to hold out a validation share',
    );
  }
  const featureIdx = train.header.map((_, i) => i).filter((i) => !targetIdx.includes(i));
  const pick = (row: readonly string[], idx: readonly number[]): string[] =>
    idx.map((i) => row[i]!);
  const sampleValues = sample.rows[0]!.slice(1);
  const text = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
  const files: Record<string, string> = {
    'grader/harness.py': text(MLE_GRADER_HARNESS),
    'grader/grade.py': text(grader),
    'data/test/train.csv': text(csvText(train.header, train.rows)),
    'data/test/test.csv': text(csvText(test.header, test.rows)),
    'data/test/sample_submission.csv': text(csvText(sample.header, sample.rows)),
    'answers/test.csv': text(csvText(answers.header, answers.rows)),
    'data/validation/train.csv': text(csvText(train.header, kept)),
    'data/validation/test.csv': text(
      csvText(
        pick(train.header, featureIdx),
        held.map((r) => pick(r, featureIdx)),
      ),
    ),
    'data/validation/sample_submission.csv': text(
      csvText(
        sample.header,
        held.map((r) => [r[trainIdIdx]!, ...sampleValues]),
      ),
    ),
    'answers/validation.csv': text(
      csvText(
        [idColumn, ...targets],
        held.map((r) => [r[trainIdIdx]!, ...pick(r, targetIdx)]),
      ),
    ),
  };
  const bytes = Object.values(files).reduce((n, b) => n + Math.ceil((b.length * 3) / 4), 0);
  if (bytes > MAX_SUITE_BYTES) {
    throw refused(field, publicDir, `the competition's files exceed ${MAX_SUITE_BYTES} bytes`);
  }
  const raw = {
    name: config.id,
    description:
      `${description.trim()}\n\n` +
      `Protocol: the working directory holds train.csv, test.csv and sample_submission.csv. ` +
      `Write submission.csv with the header "${sample.header.join(',')}" and one row per test ` +
      `id. It is graded by ${config.grader.name} (${lower ? 'lower' : 'higher'} is better) in a ` +
      `separate sandbox: the labels are never in the program's reach, and printed scores are ignored.`,
    language: 'python',
    seeds: [config.troupe.seed],
    direction: lower ? 'minimise' : 'maximise',
    evaluator: {
      image: config.troupe.image,
      command: [
        'python3',
        '{suite}/grader/harness.py',
        '--grader',
        '{suite}/grader/grade.py',
        '--answers',
        '{suite}/answers/{phase}.csv',
        '--submission',
        '{submission}',
        '--columns',
        sample.header.join(','),
      ],
      timeoutMs: config.troupe.timeoutMs,
      memoryMb: config.troupe.memoryMb,
      sealed: {
        command: ['python3', '{program}'],
        output: 'submission.csv',
        maxOutputBytes: config.troupe.maxOutputBytes,
      },
    },
    phases: {
      validation: {
        files: ['grader/', 'answers/validation.csv'],
        candidate: 'data/validation/',
      },
      test: { files: ['grader/', 'answers/test.csv'], candidate: 'data/test/' },
    },
    ...(config.troupe.limits ? { limits: config.troupe.limits } : {}),
    ...(config.troupe.search ? { search: config.troupe.search } : {}),
    reference: { ...config.thresholds },
  };
  let spec: SearchTaskSpec;
  try {
    spec = parseWith(SearchTaskSpecSchema, raw, { prefix: 'config.yaml' });
  } catch (err) {
    if (errorCode(err) !== 'INVALID_ARGUMENT') throw err;
    throw refused(field, configFile, (err as Error).message);
  }
  return { suiteDir, spec, seeds: [{ language: 'python', source: seed }], files };
}

/** Whether `dir` is an MLE-bench competition folder (it holds `config.yaml`). */
export async function isMleCompetition(dir: string, cwd: string = process.cwd()): Promise<boolean> {
  try {
    return (await stat(path.join(path.resolve(cwd, dir), MLE_CONFIG_FILE))).isFile();
  } catch {
    return false;
  }
}

/**
 * Where `score` lands among a competition's thresholds (`gold`, `silver`, `bronze`, `median`
 * in `reference`); undefined when the suite has no medal table or there is no score.
 */
export function medalOf(
  score: number | null | undefined,
  reference: Readonly<Record<string, number>>,
  direction: SearchTaskSpec['direction'],
): Medal | undefined {
  const { gold, silver, bronze, median } = reference;
  if (score === null || score === undefined) return undefined;
  if (gold === undefined || silver === undefined || bronze === undefined) return undefined;
  const atLeast = (t: number): boolean => (direction === 'minimise' ? score <= t : score >= t);
  if (atLeast(gold)) return 'gold';
  if (atLeast(silver)) return 'silver';
  if (atLeast(bronze)) return 'bronze';
  if (median !== undefined && atLeast(median)) return 'above_median';
  return 'none';
}
