import type { FuzzTarget } from '../fuzz-target';
import { actorWireTarget } from './actor-wire';
import { grpcRequestsTarget } from './grpc-requests';
import { specTextTarget } from './spec-text';
import { taskFilesTarget } from './task-files';
import { toolCallsTarget } from './tool-calls';

/** Every fuzz target, in run order. */
export const FUZZ_TARGETS = [
  specTextTarget,
  taskFilesTarget,
  actorWireTarget,
  grpcRequestsTarget,
  toolCallsTarget,
] as unknown as readonly FuzzTarget<never>[];
