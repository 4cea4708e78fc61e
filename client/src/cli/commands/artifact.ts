import { createWriteStream } from 'node:fs';
import * as path from 'node:path';
import { once } from 'node:events';
import { println } from '../cli-io';
import { type CommandContext } from '../command-context';
import { CliError, ExitCode } from '../exit-codes';

/** `troupe artifact <jobId> <path> [--output file]`: streams an artifact to stdout or a file. */
export async function artifactCommand(
  ctx: CommandContext,
  jobId: string,
  artifactPath: string,
  opts: { output?: string },
): Promise<number> {
  const client = ctx.client();
  const file = opts.output ? path.resolve(ctx.io.cwd, opts.output) : undefined;
  const fileStream = file ? createWriteStream(file) : undefined;
  const out: NodeJS.WritableStream = fileStream ?? ctx.io.stdout;
  let failed: Error | undefined;
  fileStream?.on('error', (err) => {
    failed = err;
  });
  let bytes = 0;
  try {
    for await (const chunk of client.getArtifact(jobId, artifactPath, { signal: ctx.signal })) {
      if (failed) break;
      bytes += chunk.data.length;
      if (!out.write(chunk.data)) await once(out, 'drain');
    }
  } finally {
    if (fileStream) {
      fileStream.end();
      await once(fileStream, 'close').catch(() => undefined);
    }
  }
  if (failed) throw new CliError(`cannot write ${opts.output}: ${failed.message}`, ExitCode.USAGE);
  if (file) println(ctx.io.stderr, `wrote ${bytes} bytes to ${file}`);
  return ExitCode.OK;
}
