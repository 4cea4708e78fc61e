import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { type JobResults__Output } from '@troupe/proto';
import { type TroupeClient } from '../troupe-client';
import { taskArtifactLinks } from './html-report';

/** Largest artifact copied next to a report (bigger ones keep their path only). */
const MAX_COPIED_BYTES = 64 * 1024 * 1024;

/**
 * Downloads every task's linked artifacts (trajectory, grader logs, workspace, …) into
 * `dir/<taskId>/<name>` and returns the `artifactHref` of an HTML report written in `reportDir`:
 * relative links to the copies. An artifact that cannot be fetched keeps its path only.
 */
export async function downloadReportArtifacts(
  client: TroupeClient,
  results: JobResults__Output,
  reportDir: string,
  dir: string,
  signal?: AbortSignal,
): Promise<(artifactPath: string) => string | undefined> {
  const copies = new Map<string, string>();
  for (const t of results.tasks) {
    for (const { path: artifact } of taskArtifactLinks(t)) {
      if (copies.has(artifact)) continue;
      try {
        const { data } = await client.downloadArtifact(results.jobId, artifact, {
          ...(signal ? { signal } : {}),
        });
        if (data.length > MAX_COPIED_BYTES) continue;
        // Task ids and artifact names are both [A-Za-z0-9._-]: safe as path segments.
        const base = path.join(dir, t.taskId, artifact.slice(artifact.lastIndexOf('/') + 1));
        const taken = new Set(copies.values());
        let unique = base;
        for (let n = 2; taken.has(unique); n++) unique = `${base}.${n}`;
        mkdirSync(path.dirname(unique), { recursive: true });
        writeFileSync(unique, data);
        copies.set(artifact, unique);
      } catch {
        // Not fetchable (deleted, too large for the deadline): the report shows the path.
      }
    }
  }
  return (artifactPath) => {
    const file = copies.get(artifactPath);
    return file ? path.relative(reportDir, file).split(path.sep).join('/') : undefined;
  };
}
