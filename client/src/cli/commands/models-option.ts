import * as path from 'node:path';
import { type CommandContext } from '../command-context';

/**
 * The embedded cluster's model options from `--models <file>` or `TROUPE_MODELS_FILE` (relative
 * to the working directory), with the environment the model API keys are read from.
 */
export function modelsOption(
  ctx: CommandContext,
  flag: string | undefined,
): { modelsFile?: string; env?: Readonly<Record<string, string | undefined>> } {
  const file = flag ?? ctx.io.env['TROUPE_MODELS_FILE'];
  return file ? { modelsFile: path.resolve(ctx.io.cwd, file), env: ctx.io.env } : {};
}
