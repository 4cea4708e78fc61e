import * as path from 'node:path';
import { type CommandContext } from '../command-context';

/**
 * The embedded cluster's model options from `--models <file>` or `TROUPE_MODELS_FILE` (relative
 * to the working directory), with the environment the model API keys are read from, and the
 * skills directory pushed to the cluster's skill store (`--skills <dir>` or `TROUPE_SKILLS_DIR`).
 */
export function modelsOption(
  ctx: CommandContext,
  flag: string | undefined,
  skillsFlag?: string,
): { modelsFile?: string; env?: Readonly<Record<string, string | undefined>>; skillsDir?: string } {
  const file = flag ?? ctx.io.env['TROUPE_MODELS_FILE'];
  const skills = skillsFlag ?? ctx.io.env['TROUPE_SKILLS_DIR'];
  if (!file) return {};
  return {
    modelsFile: path.resolve(ctx.io.cwd, file),
    env: ctx.io.env,
    ...(skills ? { skillsDir: path.resolve(ctx.io.cwd, skills) } : {}),
  };
}
