import type { FuzzTarget } from '../fuzz-target';
import { specTextTarget } from './spec-text';

/** Every fuzz target, in run order. */
export const FUZZ_TARGETS: readonly FuzzTarget<never>[] = [
  specTextTarget,
] as unknown as readonly FuzzTarget<never>[];
