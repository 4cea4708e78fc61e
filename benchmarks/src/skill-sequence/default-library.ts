import { extractFunctions, SkillLibrary } from '@troupe/agents';
import type { ExtractSequenceFunctions, OpenSequenceLibrary } from './sequence-library';

/** Opens a job's library: `SkillLibrary` of `@troupe/agents` in the cluster's KV bucket. */
export const openSkillLibrary: OpenSequenceLibrary = async ({ nats, libraryId, admission }) =>
  SkillLibrary.open(nats.connection, {
    cluster: nats.cluster,
    libraryId,
    admission,
    ...(nats.replicas !== undefined ? { replicas: nats.replicas } : {}),
  });

/** `extractFunctions` of `@troupe/agents` (a real Python parser). */
export const extractSkillFunctions: ExtractSequenceFunctions = (code) => extractFunctions(code);
