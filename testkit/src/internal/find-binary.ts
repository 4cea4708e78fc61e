import { accessSync, constants, statSync } from 'node:fs';
import path from 'node:path';

// Debian installs daemons (nats-server, dockerd) in sbin directories, which a non-root PATH often
// lacks; looking there too finds an installed binary instead of claiming it is missing.
const SBIN_FALLBACKS = ['/usr/local/sbin', '/usr/sbin', '/sbin'];

/**
 * Resolves `name` to an executable file: a name containing a slash is checked as given, anything
 * else is searched on PATH and then in the sbin directories. Returns undefined when not found.
 */
export function findBinary(name: string): string | undefined {
  if (name.includes('/')) return isExecutableFile(name) ? path.resolve(name) : undefined;
  // The testkit is harness code that behaves like a shell looking up a command, so it reads PATH.
  const searchPath = (process.env['PATH'] ?? '').split(path.delimiter).filter(Boolean);
  for (const dir of [...searchPath, ...SBIN_FALLBACKS]) {
    const candidate = path.join(dir, name);
    if (isExecutableFile(candidate)) return candidate;
  }
  return undefined;
}

function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
