import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';

/** Default data directory of `troupe dev`, under the working directory. */
export const DEFAULT_DATA_DIR = '.troupe';

/** What `troupe dev` writes to `<dataDir>/dev.json` so other commands find the cluster. */
export const DevStateSchema = z.object({
  /** `host:port` of the job API. */
  address: z.string(),
  /** File holding the bearer token. */
  tokenFile: z.string(),
  cluster: z.string(),
  natsUrl: z.string(),
  /** Process id of `troupe dev`. */
  pid: z.number().int(),
});
/** Contents of `dev.json`. */
export type DevState = z.output<typeof DevStateSchema>;

/** The data directory: `--data-dir`, or `<cwd>/.troupe`. */
export function dataDirOf(cwd: string, dataDir: string | undefined): string {
  return path.resolve(cwd, dataDir ?? DEFAULT_DATA_DIR);
}

/** The running dev cluster's state, when `dev.json` exists and its process is alive. */
export function readDevState(dataDir: string): DevState | undefined {
  let raw: string;
  try {
    raw = readFileSync(path.join(dataDir, 'dev.json'), 'utf8');
  } catch {
    return undefined;
  }
  const parsed = DevStateSchema.safeParse(safeJson(raw));
  if (!parsed.success) return undefined;
  try {
    process.kill(parsed.data.pid, 0);
  } catch {
    return undefined; // left behind by a dev cluster that is gone
  }
  return parsed.data;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
