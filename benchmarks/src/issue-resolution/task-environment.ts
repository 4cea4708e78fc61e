import { createHash } from 'node:crypto';
import { z } from 'zod';

/**
 * Bump when the meaning of a recipe changes without its fields changing (how steps are run, what
 * every environment gets), so every environment gets a new content hash.
 */
export const ENVIRONMENT_RECIPE_FORMAT = 1;

/** Debian packages every environment gets: SWE-bench graders apply patches with git or patch. */
export const ENVIRONMENT_BASE_PACKAGES = ['git', 'patch'] as const;

/** Base images an environment may start from (built offline by `deploy/images/build.sh`). */
export const ENVIRONMENT_BASES = ['base', 'python', 'python-slim', 'node'] as const;

const DEBIAN_PACKAGE = /^[a-z0-9][a-z0-9+.-]*(=[A-Za-z0-9.+~:-]+)?$/;
const NPM_PACKAGE = /^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*(@[A-Za-z0-9.^~<>=|* -]+)?$/;
const PYTHON_PACKAGE = /^[a-z0-9][a-z0-9.-]*$/;

const packageList = (pattern: RegExp, rule: string) =>
  z
    .array(z.string({ error: 'must be a string' }).regex(pattern, { error: rule }), {
      error: 'must be a list of package names',
    })
    .max(200, { error: 'must list at most 200 packages' })
    .default([]);

/** An absolute path where the repository goes (the sandbox's and the grader's working folder). */
export const WorkdirSchema = z
  .string({ error: 'must be a string (an absolute path)' })
  .regex(/^\/[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/, {
    error: 'must be an absolute path of letters, digits, ".", "_", "-" (such as /testbed)',
  })
  .refine(
    (p) =>
      ![
        '/proc',
        '/sys',
        '/dev',
        '/tmp',
        '/etc',
        '/bin',
        '/usr',
        '/lib',
        '/grader',
        '/grader-out',
      ].some((r) => p === r || p.startsWith(`${r}/`)) && !p.split('/').includes('..'),
    { error: 'must not be or lie under a system folder, /tmp or /grader' },
  );

/**
 * A task environment (`environment:` of a task.yaml or a SWE-bench suite): a base image plus set-up
 * steps run once, as root with the network, when its image is built; cached by the content hash
 * of the recipe. Steps run in this order: Debian packages (`apt` and `python`), npm packages,
 * then each `run` command.
 */
export const TaskEnvironmentSchema = z
  .object({
    /** Base image, a name of deploy/images. @default base */
    base: z
      .enum(ENVIRONMENT_BASES, {
        error: `must be one of ${ENVIRONMENT_BASES.join(', ')} (an image of deploy/images)`,
      })
      .default('base'),
    /** Debian packages (`apt-get install`), besides git and patch. @default [] */
    apt: packageList(DEBIAN_PACKAGE, 'must be a Debian package name (optionally =version)'),
    /**
     * Python packages from Debian, by their Python name: `pytest` installs `python3-pytest`.
     * @default []
     */
    python: packageList(
      PYTHON_PACKAGE,
      'must be a Python package name that Debian ships as python3-<name>',
    ),
    /**
     * npm packages installed globally (`npm install -g`, so their commands are on PATH), e.g.
     * `mocha@10.7.3`. Pin versions for reproducible environments. @default []
     */
    npm: packageList(NPM_PACKAGE, 'must be an npm package name, optionally @version'),
    /** Shell commands (`sh -c`, as root, network on), run last. @default [] */
    run: z
      .array(
        z
          .string({ error: 'must be a string (a shell command)' })
          .min(1, { error: 'must not be empty' })
          .max(8192, { error: 'must be at most 8192 characters' }),
        { error: 'must be a list of shell commands' },
      )
      .max(100, { error: 'must list at most 100 commands' })
      .default([]),
  })
  .strict();
/** A validated task environment. */
export type TaskEnvironment = z.output<typeof TaskEnvironmentSchema>;

/** One set-up step of an environment: what runs, for reports. */
export interface EnvironmentStep {
  /** Position in the recipe, from 1. */
  index: number;
  /** What it does, as a shell command. */
  command: string;
}

/** The set-up steps of `env`, in the order the builder runs them. */
export function environmentSteps(env: TaskEnvironment, workdir: string): EnvironmentStep[] {
  const steps: string[] = [];
  const debian = [
    ...ENVIRONMENT_BASE_PACKAGES,
    ...env.apt,
    ...env.python.map((p) => `python3-${p}`),
  ];
  // npm packages are installed by the builder host's npm client; they need node to run.
  if (env.npm.length > 0) debian.push('nodejs');
  steps.push(
    'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ' +
      `--no-install-recommends ${[...new Set(debian)].join(' ')}`,
  );
  if (env.npm.length > 0) {
    steps.push(`npm install -g --no-audit --no-fund --no-update-notifier ${env.npm.join(' ')}`);
  }
  steps.push(...env.run);
  // The working folder belongs to the sandbox user: Docker copies this ownership into the empty
  // volume a sandbox mounts there.
  steps.push(
    `mkdir -p ${workdir} && chown 1000:1000 ${workdir} && chmod 0755 ${workdir} && ` +
      'rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb /root/.npm',
  );
  return steps.map((command, i) => ({ index: i + 1, command }));
}

/** The content hash of an environment (12 hex digits): its image tag. */
export function environmentHash(
  env: TaskEnvironment,
  workdir: string,
  baseImageId: string,
): string {
  return createHash('sha256')
    .update(
      JSON.stringify({
        format: ENVIRONMENT_RECIPE_FORMAT,
        baseImageId,
        workdir,
        steps: environmentSteps(env, workdir).map((s) => s.command),
      }),
    )
    .digest('hex')
    .slice(0, 12);
}
