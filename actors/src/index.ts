/**
 * @troupe/actors: virtual actors over NATS JetStream — addressing, refs, turn-based
 * activations, durable inboxes, effectively-once state, placement protocol and supervision.
 * @packageDocumentation
 */
export { ActorSystem, type ActorSystemOptions, type NatsCredentials } from './actor-system';
export {
  defineActor,
  type ActorDefinition,
  type ActorDefinitionOptions,
  type AnyActorDefinition,
  type Handler,
  type HandlerResult,
  type HandlersFor,
  type MessageOf,
  type MessageSchemas,
  type InvalidMessage,
  type MessageTypeOf,
  type ReplyOf,
} from './actor-definition';
export {
  type ActorContext,
  type DeliveryMode,
  type InboxMessage,
  type MessageInfo,
} from './actor-context';
export {
  ActorRef,
  isCommitFailed,
  isHostSilent,
  UntypedActorRef,
  type AskOptions,
  type PostOptions,
  type PostReceipt,
} from './actor-ref';
export { type RefFactory } from './ref-factory';
export { type PlacementHints } from './internal/transport';
export {
  ActivationState,
  Directory,
  DirectoryEntrySchema,
  isLiveState,
  jobScopeOf,
  type DirectoryEntry,
  type VersionedEntry,
} from './directory';
export {
  FencedError,
  StoreUnavailableError,
  storeOutageOf,
  StateRecordSchema,
  StateStore,
  type StoredState,
  type StateRecord,
} from './state-store';
export { retireActor, RETIRED_REASON, type RetireDeps, type RetireOutcome } from './retire';
export { isNoResponders, isTransientNatsError } from './internal/nats-errors';
export { isWrongLastSequence } from './internal/kv-errors';
export { kvKeys, kvKeysAt } from './kv-keys';
export { kvLatest, type KvLatest, type KvLatestEntry } from './kv-latest';
export {
  kvEntryFromLeader,
  kvValueFromLeader,
  publishToStream,
  type StreamAck,
} from './internal/direct-get';
export { KvWriter } from './kv-writer';
export { requesterOf } from './internal/requester';
export { deleteSubjectMessages, removeKvKey, subjectMessages } from './internal/subject-delete';
export { PULL_EXPIRES_MS } from './pull-expiry';
export { watchConnectionStatus } from './connection-status';
export {
  LocalPlacer,
  PlacementService,
  type HostSelector,
  type LocalPlacerOptions,
  type PlacementRequest,
  type PlacementServiceOptions,
  type PlacementTarget,
  type PlacementTransport,
} from './placement-service';
export { isPlacerStopped, placerStoppedError } from './internal/protocol';
export { type BucketClientOptions, createKv, createObjectStore } from './buckets';
export { ensureStream, type EnsuredStream, type StreamSpec } from './ensure-stream';
export { LazyStream, type LazyStreamOptions } from './lazy-stream';
export {
  ensureInfrastructure,
  type ActorInfrastructure,
  type InfrastructureOptions,
} from './infrastructure';
export { type Logger, noopLogger } from '@troupe/proto';
export {
  DeregisterSchema,
  HeartbeatReplySchema,
  HeartbeatSchema,
  HostInfoSchema,
  RegisterReplySchema,
  REGISTER_TIMEOUT_MS,
  type Heartbeat,
  type HeartbeatReply,
  type HostInfo,
  type RegisterReply,
} from './host-protocol';
