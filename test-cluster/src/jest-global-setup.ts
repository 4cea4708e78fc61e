import { execFileSync } from 'node:child_process';
import { REPO_ROOT } from './built-entry-points';
import { describeStale, stalePackages } from './stale-build';

/**
 * The integration project's jest `globalSetup`: integration tests spawn `dist/main.js` of the
 * coordinator, node agent and CLI, so a build older than its sources would test stale code. When
 * any package's `dist/` is older than its sources this runs the incremental build
 * (`npm run build`, i.e. `tsc -b tsconfig.build.json`, which recompiles only what changed) and
 * fails the run if the build fails or leaves anything stale.
 */
export default function globalSetup(): void {
  const stale = stalePackages(REPO_ROOT);
  if (stale.length === 0) return;
  process.stderr.write(
    `\ntest-cluster: dist/ older than sources: ${describeStale(stale)}; building\n`,
  );
  try {
    execFileSync('npm', ['run', '-s', 'build'], { cwd: REPO_ROOT, stdio: 'inherit' });
  } catch (err) {
    throw new Error('integration tests need a current build and `npm run build` failed', {
      cause: err,
    });
  }
  const still = stalePackages(REPO_ROOT);
  if (still.length > 0) {
    throw new Error(
      `dist/ is still older than the sources after \`npm run build\`: ${describeStale(still)}`,
    );
  }
}
