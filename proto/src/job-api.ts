import * as path from 'node:path';
import { loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader';
import type { ProtoGrpcType } from './generated/jobs';

/**
 * Options of `@grpc/proto-loader` for the job API. They are the options the typed code in
 * `src/generated` was generated with (`scripts/gen-types.js`, checked by a unit test): camelCase
 * field names, 64-bit integers as JS numbers (all of ours — Unix ms, tokens, byte offsets, event
 * sequences — stay far below 2^53), enums as their string names, defaults for absent fields
 * (proto3 `optional` fields stay absent when unset), and virtual oneof fields.
 */
export const JOB_API_LOADER_OPTIONS = {
  keepCase: false,
  longs: Number,
  enums: String,
  defaults: true,
  oneofs: true,
} as const satisfies Options;

/** Path of `troupe/v1/jobs.proto` relative to the include root. */
export const JOB_API_PROTO_FILE = 'troupe/v1/jobs.proto';

/**
 * The include root holding `troupe/v1/*.proto`: the package root, one level above this file both
 * in `src/` (tests, ts paths) and in `dist/` (the published build).
 */
export function jobApiIncludeDir(): string {
  return path.resolve(__dirname, '..');
}

/** The loaded job API: what gRPC servers and clients are built from. */
export interface JobApi {
  /** The package definition, e.g. for server reflection. */
  readonly packageDefinition: PackageDefinition;
  /** The typed grpc-js object tree (`grpc.troupe.v1.JobService`, message and enum types). */
  readonly grpc: ProtoGrpcType;
  /**
   * `troupe.v1.JobService`: a client constructor (`new JobService(address, credentials)`) whose
   * `service` is the definition to pass to `server.addService`.
   */
  readonly JobService: ProtoGrpcType['troupe']['v1']['JobService'];
  /** `troupe.v1.NodeService`, like {@link JobApi.JobService}. */
  readonly NodeService: ProtoGrpcType['troupe']['v1']['NodeService'];
}

let cached: JobApi | undefined;

/**
 * Loads `troupe/v1/jobs.proto` with {@link JOB_API_LOADER_OPTIONS} (synchronously, once per
 * process; later calls return the same object).
 */
export function loadJobApi(): JobApi {
  if (cached !== undefined) return cached;
  const packageDefinition = loadSync(JOB_API_PROTO_FILE, {
    ...JOB_API_LOADER_OPTIONS,
    includeDirs: [jobApiIncludeDir()],
  });
  // The generated ProtoGrpcType describes exactly what loadPackageDefinition builds from this file
  // with these options; grpc-js can only type it as a generic GrpcObject.
  const grpc = loadPackageDefinition(packageDefinition) as unknown as ProtoGrpcType;
  cached = {
    packageDefinition,
    grpc,
    JobService: grpc.troupe.v1.JobService,
    NodeService: grpc.troupe.v1.NodeService,
  };
  return cached;
}
