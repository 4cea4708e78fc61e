import type { FuzzTarget } from '../fuzz-target';
import { actorWireTarget } from './actor-wire';
import { grpcRequestsTarget } from './grpc-requests';
import { specTextTarget } from './spec-text';
import { taskFilesTarget } from './task-files';

/** Every fuzz target, in run order. */
export const FUZZ_TARGETS = [
  specTextTarget,
  taskFilesTarget,
  actorWireTarget,
  grpcRequestsTarget,
] as unknown as readonly FuzzTarget<never>[];
