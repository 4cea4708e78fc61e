import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseUntrustedText, parseWith } from '@troupe/proto';
import { z } from 'zod';
import { Direction } from './direction';
import { EvolveLimitsSchema, type EvolveOptions, EvolveOptionsSchema } from './evolve-config';
import { type EvaluationPhase } from './evaluation-request';
import { type Program } from './program';

const relativePath = z
  .string()
  .min(1)
  .refine(
    (p) => !path.isAbsolute(p) && !p.split(/[\\/]/).includes('..'),
    'must be a path inside the suite folder (relative, no ..)',
  );

const PhaseSchema = z
  .object({
    /**
     * Suite files (folders end with `/`) the evaluator needs in this phase, relative to the suite
     * folder. The test phase's data must not be listed for validation: that is what keeps it
     * hidden from the search.
     */
    files: z.array(relativePath).min(1),
    /**
     * Sealed grading (`evaluator.sealed`): the suite folder whose files (features and training
     * data only, never an answer the phase is scored on) are the candidate's working directory.
     * Only these reach the candidate's sandbox; `files` go to the separate grader sandbox.
     */
    candidate: relativePath.optional(),
  })
  .strict();

/**
 * Sealed grading: the candidate runs alone in its own sandbox with the phase's `candidate`
 * folder as its working directory, its output file is copied out (bounded), and the evaluator
 * command grades it in a second sandbox that alone holds the phase's `files` (the answers).
 */
const SealedSchema = z
  .object({
    /** The candidate's command (argv); placeholders `{program}` and `{timeoutS}`. */
    command: z.array(z.string().min(1)).min(1).default(['python3', '{program}']),
    /** The file the candidate writes in its working directory, e.g. `submission.csv`. */
    output: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'must be a plain file name (no folders)'),
    /** Largest output copied to the grader; a larger one grades `invalid`. @default 262144 */
    maxOutputBytes: z
      .number()
      .int()
      .positive()
      .max(4 * 1024 * 1024)
      .default(256 * 1024),
  })
  .strict();

/**
 * Schema of a suite's `task.yaml`: what to evolve, how to evaluate it, and the search defaults.
 * Strict: an unknown field is an error naming it.
 */
export const SearchTaskSpecSchema = z
  .object({
    /** Suite name, e.g. `binpacking-or3`. */
    name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,63}$/, 'must match [a-z0-9][a-z0-9-]{0,63}'),
    /** What the task is (shown to LLM operators; the seed's protocol should be described). */
    description: z.string().min(1),
    /** Language of the programs. */
    language: z.string().regex(/^[a-z][a-z0-9+#-]{0,31}$/),
    /** Seed program files, relative to the suite folder. */
    seeds: z.array(relativePath).min(1),
    /** Whether higher or lower scores are better. */
    direction: z.enum([Direction.MAXIMISE, Direction.MINIMISE]),
    /** How candidates are evaluated. */
    evaluator: z
      .object({
        /** Sandbox image (name of a `deploy/images` recipe), e.g. `python-slim`. */
        image: z.string().regex(/^[a-z0-9][a-z0-9-]*$/),
        /**
         * Command (argv). Placeholders: `{suite}` (where the phase's files are), `{program}`
         * (the candidate's path), `{phase}`, `{timeoutS}` (the program's deadline inside the
         * evaluator: the evaluation deadline minus a margin for the evaluator itself).
         */
        command: z.array(z.string().min(1)).min(1),
        /** Evaluation deadline (the hard kill), ms. @default the search's evaluationTimeoutMs */
        timeoutMs: z.number().int().positive().optional(),
        /** Memory limit of the sandbox, MB. @default 1024 */
        memoryMb: z.number().int().positive().default(1024),
        /**
         * A grader environment with dependency set-up, built once into an image on top of
         * `image` (checked by the host's driver: the `evolve` driver takes the task environments
         * of the issue-resolution driver: `apt`, `python`, `npm`, `run`). @default none
         */
        environment: z.record(z.string(), z.unknown()).optional(),
        /**
         * Grade in a separate sandbox that alone holds the answers (see `SealedSchema`); the
         * command then also gets `{submission}` (the candidate's output file in that sandbox).
         */
        sealed: SealedSchema.optional(),
      })
      .strict(),
    /** Files per phase. */
    phases: z.object({ validation: PhaseSchema, test: PhaseSchema }).strict(),
    /** Default limits of the search. */
    limits: EvolveLimitsSchema.default(() => EvolveLimitsSchema.parse({})),
    /** Default search options (everything but direction, description and limits). */
    search: EvolveOptionsSchema.omit({ direction: true, description: true, limits: true })
      .partial()
      .strict()
      .default({}),
    /** Reference scores for reading results (name → score). */
    reference: z.record(z.string(), z.number()).default({}),
  })
  .strict()
  .superRefine((spec, ctx) => {
    checkSealed(spec, ctx);
    const validation = new Set(spec.phases.validation.files);
    for (const f of spec.phases.test.files) {
      if (validation.has(f)) continue;
      // Anything only the test phase needs must stay out of the validation phase's files.
      if (spec.phases.validation.files.some((v) => v.endsWith('/') && f.startsWith(v))) {
        ctx.addIssue({
          code: 'custom',
          path: ['phases', 'test', 'files'],
          message: `${f} is inside a validation-phase folder, so the search could read it`,
        });
      }
    }
  });

type SpecShape = {
  evaluator: { sealed?: unknown };
  phases: Record<'validation' | 'test', { files: string[]; candidate?: string | undefined }>;
};

/** A sealed spec names each phase's candidate folder, and no answer file lies inside one. */
function checkSealed(spec: SpecShape, ctx: z.RefinementCtx): void {
  for (const phase of ['validation', 'test'] as const) {
    const { candidate } = spec.phases[phase];
    if (!spec.evaluator.sealed) {
      if (candidate !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['phases', phase, 'candidate'],
          message: 'needs evaluator.sealed (without it the program runs inside the evaluator)',
        });
      }
      continue;
    }
    if (candidate === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['phases', phase, 'candidate'],
        message: 'is required with evaluator.sealed (the folder the candidate runs in)',
      });
      continue;
    }
    const base = candidate.replace(/\/+$/, '');
    for (const [phaseName, other] of Object.entries(spec.phases)) {
      for (const f of other.files) {
        const g = f.replace(/\/+$/, '');
        if (g === base || g.startsWith(`${base}/`) || base.startsWith(`${g}/`)) {
          ctx.addIssue({
            code: 'custom',
            path: ['phases', phase, 'candidate'],
            message: `overlaps the grader file ${f} of phase ${phaseName}: the candidate could read it`,
          });
        }
      }
    }
  }
}

/** A parsed `task.yaml`. */
export type SearchTaskSpec = z.output<typeof SearchTaskSpecSchema>;

/**
 * Parses the text of a `task.yaml`.
 * @throws TroupeError `INVALID_ARGUMENT` naming every broken field (`task.yaml.seeds[0]: …`)
 */
export function parseSearchTaskSpec(yamlText: string): SearchTaskSpec {
  const value = parseUntrustedText(yamlText, { field: 'task.yaml' });
  return parseWith(SearchTaskSpecSchema, value, { prefix: 'task.yaml' });
}

/** The search options a spec describes, with `overrides` (e.g. a job's seed or limits) on top. */
export function evolveOptionsFromSpec(
  spec: SearchTaskSpec,
  overrides: Partial<EvolveOptions> = {},
): EvolveOptions {
  return {
    ...spec.search,
    direction: spec.direction,
    description: spec.description,
    ...(spec.evaluator.timeoutMs ? { evaluationTimeoutMs: spec.evaluator.timeoutMs } : {}),
    limits: spec.limits,
    ...overrides,
  };
}

/**
 * The evaluator argv of a spec with its placeholders filled in. `{timeoutS}` is the evaluation
 * deadline minus a margin (a tenth, at most 5 s) so the evaluator can report `timeout` itself
 * before the hard kill.
 */
export function renderEvaluatorCommand(
  spec: SearchTaskSpec,
  vars: {
    suite: string;
    program: string;
    phase: EvaluationPhase;
    timeoutMs: number;
    /** Where the candidate's output is (sealed grading). */
    submission?: string;
  },
): string[] {
  const margin = Math.min(5_000, vars.timeoutMs / 10);
  const values: Record<string, string> = {
    suite: vars.suite,
    program: vars.program,
    phase: vars.phase,
    timeoutS: String(Math.max(0.1, (vars.timeoutMs - margin) / 1000)),
    submission: vars.submission ?? '',
  };
  return spec.evaluator.command.map((arg) =>
    arg.replace(
      /\{(suite|program|phase|timeoutS|submission)\}/g,
      (_m, key: string) => values[key] ?? '',
    ),
  );
}

/** A suite loaded from disk: its spec and seed programs. */
export interface LoadedSearchTask {
  /** Absolute path of the suite folder. */
  suiteDir: string;
  /** The parsed task.yaml. */
  spec: SearchTaskSpec;
  /** The seed programs. */
  seeds: Program[];
}

/** Reads `<suiteDir>/task.yaml` and its seed programs. */
export async function loadSearchTask(suiteDir: string): Promise<LoadedSearchTask> {
  const dir = path.resolve(suiteDir);
  const spec = parseSearchTaskSpec(await readFile(path.join(dir, 'task.yaml'), 'utf8'));
  const seeds = await Promise.all(
    spec.seeds.map(async (file) => ({
      language: spec.language,
      source: await readFile(path.join(dir, file), 'utf8'),
    })),
  );
  return { suiteDir: dir, spec, seeds };
}
