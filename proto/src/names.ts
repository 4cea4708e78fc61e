import { invalidArgument } from './errors';

// Every NATS subject, stream, KV bucket and object store name of ARCHITECTURE.md §3 is built
// here and nowhere else. Each builder validates its inputs, so a malformed name is rejected with
// INVALID_ARGUMENT before it reaches NATS (where a stray `.`, `*` or `>` would silently change
// which subscribers see a message).

/** The patterns names must match. Anchored; each used by one `validate…` function. */
export const NamePattern = {
  /** Cluster name: lowercase letters, digits and `-`, 1 to 32 characters. */
  CLUSTER: /^[a-z0-9-]{1,32}$/,
  /** Actor kind: a lowercase letter, then up to 31 lowercase letters, digits or `-`. */
  ACTOR_KIND: /^[a-z][a-z0-9-]{0,31}$/,
  /** Actor id: 1 to 128 letters, digits, `_` or `-`. */
  ACTOR_ID: /^[A-Za-z0-9_-]{1,128}$/,
  /** Host id: 1 to 64 letters, digits, `_` or `-`. */
  HOST_ID: /^[A-Za-z0-9_-]{1,64}$/,
  /** Job id: same rule as an actor id. */
  JOB_ID: /^[A-Za-z0-9_-]{1,128}$/,
  /** Verb of a host or coordinator subject: a lowercase letter, then lowercase letters, digits, `-`. */
  VERB: /^[a-z][a-z0-9-]*$/,
  /**
   * Docker image reference or id, as the sandbox layer accepts it (`name[:tag][@digest]`); the
   * length is each schema's own bound.
   */
  IMAGE_REF: /^[A-Za-z0-9][A-Za-z0-9._/:@-]*$/,
  /**
   * Model name of the registry, and model id sent to an OpenAI-compatible endpoint: a letter or
   * digit, then up to 127 letters, digits, `.`, `_`, `:`, `/` or `-` (`gpt-4o`, `qwen2.5:7b`,
   * `Qwen/Qwen2.5-7B-Instruct`).
   */
  MODEL_NAME: /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/,
} as const;

/** The rule each {@link NamePattern} states, as error messages put it (`must …`). */
export const NameRule = {
  CLUSTER: 'must match [a-z0-9-]{1,32}',
  ACTOR_KIND: 'must match [a-z][a-z0-9-]{0,31}',
  ACTOR_ID: 'must match [A-Za-z0-9_-]{1,128}',
  HOST_ID: 'must match [A-Za-z0-9_-]{1,64}',
  JOB_ID: 'must match [A-Za-z0-9_-]{1,128}',
  VERB: 'must match [a-z][a-z0-9-]*',
  IMAGE_REF: 'must be a Docker image reference or id',
  MODEL_NAME: 'must match [A-Za-z0-9][A-Za-z0-9._:/-]{0,127}',
} as const satisfies Record<keyof typeof NamePattern, string>;

function check(kind: keyof typeof NamePattern, field: string, value: unknown): string {
  if (typeof value !== 'string') throw invalidArgument(field, `must be a string`, value);
  if (!NamePattern[kind].test(value)) throw invalidArgument(field, NameRule[kind], value);
  return value;
}

/**
 * Whether `value` is an `http:` or `https:` URL without a user name or password: what a model
 * endpoint's base URL must be (credentials in a URL would end up in logs and trajectories).
 */
export function isHttpUrlWithoutCredentials(value: string): boolean {
  try {
    const url = new URL(value);
    return (
      (url.protocol === 'http:' || url.protocol === 'https:') &&
      url.username === '' &&
      url.password === ''
    );
  } catch {
    return false;
  }
}

/** Where an actor lives logically: its kind (the definition) and its id (the instance). */
export type ActorAddress = {
  /** Actor kind, `[a-z][a-z0-9-]{0,31}`. */
  kind: string;
  /** Actor id, `[A-Za-z0-9_-]{1,128}`. */
  id: string;
};

/**
 * Checks a cluster name (`[a-z0-9-]{1,32}`) and returns it.
 * @throws TroupeError `INVALID_ARGUMENT` naming the value and the rule
 */
export function validateClusterName(cluster: unknown): string {
  return check('CLUSTER', 'cluster name', cluster);
}

/**
 * Checks an actor kind (`[a-z][a-z0-9-]{0,31}`) and returns it.
 * @throws TroupeError `INVALID_ARGUMENT` naming the value and the rule
 */
export function validateActorKind(kind: unknown): string {
  return check('ACTOR_KIND', 'actor kind', kind);
}

/**
 * Checks an actor id (`[A-Za-z0-9_-]{1,128}`) and returns it.
 * @throws TroupeError `INVALID_ARGUMENT` naming the value and the rule
 */
export function validateActorId(id: unknown): string {
  return check('ACTOR_ID', 'actor id', id);
}

/**
 * Checks a host id (`[A-Za-z0-9_-]{1,64}`) and returns it.
 * @throws TroupeError `INVALID_ARGUMENT` naming the value and the rule
 */
export function validateHostId(hostId: unknown): string {
  return check('HOST_ID', 'host id', hostId);
}

/**
 * Checks a job id (`[A-Za-z0-9_-]{1,128}`, the actor id rule) and returns it.
 * @throws TroupeError `INVALID_ARGUMENT` naming the value and the rule
 */
export function validateJobId(jobId: unknown): string {
  return check('JOB_ID', 'job id', jobId);
}

/**
 * Checks an actor address (an object with a valid `kind` and `id`) and returns a copy holding only
 * those two fields.
 * @throws TroupeError `INVALID_ARGUMENT` naming the field, the value and the rule
 */
export function validateAddress(addr: unknown): ActorAddress {
  if (typeof addr !== 'object' || addr === null) {
    throw invalidArgument('actor address', 'must be an object {kind, id}', addr);
  }
  const { kind, id } = addr as Record<string, unknown>;
  return { kind: validateActorKind(kind), id: validateActorId(id) };
}

/** `kind/id`, the human and log form of an address (validated). */
export function formatAddress(addr: ActorAddress): string {
  const { kind, id } = validateAddress(addr);
  return `${kind}/${id}`;
}

/**
 * Parses the `kind/id` form of {@link formatAddress}.
 * @throws TroupeError `INVALID_ARGUMENT` when the text is not exactly one valid kind, `/`, one valid id
 */
export function parseAddress(text: string): ActorAddress {
  if (typeof text !== 'string') throw invalidArgument('actor address', 'must be a string', text);
  const parts = text.split('/');
  if (parts.length !== 2) {
    throw invalidArgument('actor address', 'must have the form kind/id', text);
  }
  return validateAddress({ kind: parts[0], id: parts[1] });
}

/** Verbs of the host control subjects (`troupe.<c>.host.<hostId>.<verb>`). */
export const HostVerb = {
  /** Start an activation of an actor on the host. */
  ACTIVATE: 'activate',
  /** Passivate an activation. */
  DEACTIVATE: 'deactivate',
  /** Stop taking new activations. */
  DRAIN: 'drain',
  /** Report capacity and load. */
  STATS: 'stats',
  /** Liveness check. */
  PING: 'ping',
} as const;

/** One of the {@link HostVerb} values. */
export type HostVerb = (typeof HostVerb)[keyof typeof HostVerb];

/** Coordinator services (`troupe.<c>.coord.<service>.<verb>`). */
export const CoordService = {
  /** Actor directory: lookups, activation requests. */
  DIRECTORY: 'directory',
  /** Wake/sleep scheduler. */
  SCHED: 'sched',
  /** Budget ledger: reserve, settle, release. */
  BUDGET: 'budget',
  /** Node registry: register, heartbeat. */
  NODES: 'nodes',
  /** Job manager. */
  JOBS: 'jobs',
} as const;

/** One of the {@link CoordService} values. */
export type CoordService = (typeof CoordService)[keyof typeof CoordService];

/** KV buckets (`troupe_<c>_<bucket>`). */
export const KvBucket = {
  /** Actor directory entries `{state, hostId, epoch}`, keyed by {@link directoryKey}. */
  DIRECTORY: 'directory',
  /** Actor state and inbox cursor, keyed by {@link stateKey}. */
  STATE: 'state',
  /** Job records. */
  JOBS: 'jobs',
  /** Budget ledger scopes and reservations. */
  BUDGET: 'budget',
  /** Node registrations and heartbeats. */
  NODES: 'nodes',
  /** Persisted definitions (for example subagents created at run time). */
  DEFS: 'defs',
  /** Leases (coordinator leader election). */
  LEASES: 'leases',
  /** Durable reminders (`remindAt`), keyed by reminder id. */
  REMINDERS: 'reminders',
  /** Memory bank commit records and their indexes (blobs are in {@link bankObjectStoreName}). */
  BANKS: 'banks',
  /** Agent skills (`SKILL.md` folders), keyed by skill name. */
  SKILLS: 'skills',
  /** Agents' long-term memory entries, keyed `<scope>.<key>`. */
  MEMORY: 'memory',
  /** Progress journals of `skill-sequence` scenarios, keyed `<jobId>.<scenario>.<arm>.<taskId>`. */
  SEQUENCES: 'sequences',
  /** SAGE skill libraries: Python functions by version, keyed `<libraryId>.<name>.<version>`. */
  SKILL_LIBRARY: 'skill_library',
  /**
   * Finished task results kept for re-runs (issue-resolution `resultsDir`), keyed
   * `<namespace>.<taskId>`: any coordinator host of the cluster skips what another finished.
   */
  RESULTS: 'results',
} as const;

/** One of the {@link KvBucket} values. */
export type KvBucket = (typeof KvBucket)[keyof typeof KvBucket];

const HOST_VERBS: ReadonlySet<string> = new Set(Object.values(HostVerb));
const COORD_SERVICES: ReadonlySet<string> = new Set(Object.values(CoordService));
const KV_BUCKETS: ReadonlySet<string> = new Set(Object.values(KvBucket));

function oneOf(field: string, allowed: ReadonlySet<string>, value: unknown): string {
  if (typeof value !== 'string' || !allowed.has(value)) {
    throw invalidArgument(field, `must be one of ${[...allowed].join(', ')}`, value);
  }
  return value;
}

/** `troupe.<c>` */
function root(cluster: string): string {
  return `troupe.${validateClusterName(cluster)}`;
}

/** `TROUPE_<C>_<suffix>`: stream names are upper case and use `_` (no `-`). */
function streamName(cluster: string, suffix: string): string {
  return `TROUPE_${validateClusterName(cluster).toUpperCase().replaceAll('-', '_')}_${suffix}`;
}

function addressTokens(addr: ActorAddress): string {
  const { kind, id } = validateAddress(addr);
  return `${kind}.${id}`;
}

/** `troupe.<c>.actor.<kind>.<id>`: request/reply and tell to the live activation of an actor. */
export function actorSubject(cluster: string, addr: ActorAddress): string {
  return `${root(cluster)}.actor.${addressTokens(addr)}`;
}

/** `troupe.<c>.actor.` — the text every actor subject of the cluster starts with (trailing dot). */
export function actorSubjectPrefix(cluster: string): string {
  return `${root(cluster)}.actor.`;
}

/**
 * Subscription filter for actor subjects: `troupe.<c>.actor.<kind>.*` for one kind, or
 * `troupe.<c>.actor.>` for all.
 */
export function actorSubjectFilter(cluster: string, kind?: string): string {
  return kind === undefined
    ? `${root(cluster)}.actor.>`
    : `${root(cluster)}.actor.${validateActorKind(kind)}.*`;
}

/** `troupe.<c>.inbox.<kind>.<id>`: the durable inbox of an actor, in {@link inboxStreamName}. */
export function inboxSubject(cluster: string, addr: ActorAddress): string {
  return `${root(cluster)}.inbox.${addressTokens(addr)}`;
}

/** `troupe.<c>.inbox.>`: the subjects of the inbox stream. */
export function inboxSubjectFilter(cluster: string): string {
  return `${root(cluster)}.inbox.>`;
}

/** `TROUPE_<C>_INBOX` (cluster upper-cased, `-` → `_`): the stream of all actor inboxes. */
export function inboxStreamName(cluster: string): string {
  return streamName(cluster, 'INBOX');
}

/** `troupe.<c>.dlq.<kind>.<id>`: messages an actor could not process, in {@link deadLetterStreamName}. */
export function deadLetterSubject(cluster: string, addr: ActorAddress): string {
  return `${root(cluster)}.dlq.${addressTokens(addr)}`;
}

/** `troupe.<c>.dlq.>`: the subjects of the dead-letter stream. */
export function deadLetterSubjectFilter(cluster: string): string {
  return `${root(cluster)}.dlq.>`;
}

/** `TROUPE_<C>_DLQ`: the dead-letter stream. */
export function deadLetterStreamName(cluster: string): string {
  return streamName(cluster, 'DLQ');
}

/** `troupe.<c>.host.<hostId>.<verb>`: control requests to one node agent. */
export function hostSubject(cluster: string, hostId: string, verb: HostVerb): string {
  return `${root(cluster)}.host.${validateHostId(hostId)}.${oneOf('host verb', HOST_VERBS, verb)}`;
}

/** `troupe.<c>.host.<hostId>.*`: what a node agent subscribes to. */
export function hostSubjectFilter(cluster: string, hostId: string): string {
  return `${root(cluster)}.host.${validateHostId(hostId)}.*`;
}

/**
 * `troupe.<c>.coord.<service>.<verb>`: a coordinator service endpoint; `verb` must match
 * `[a-z][a-z0-9-]*`.
 */
export function coordSubject(cluster: string, service: CoordService, verb: string): string {
  const svc = oneOf('coordinator service', COORD_SERVICES, service);
  return `${root(cluster)}.coord.${svc}.${check('VERB', 'verb', verb)}`;
}

/** `troupe.<c>.coord.<service>.*`: what a coordinator service subscribes to. */
export function coordSubjectFilter(cluster: string, service: CoordService): string {
  return `${root(cluster)}.coord.${oneOf('coordinator service', COORD_SERVICES, service)}.*`;
}

/** `troupe.<c>.events.<jobId>`: the event log of one job, in {@link eventsStreamName}. */
export function eventsSubject(cluster: string, jobId: string): string {
  return `${root(cluster)}.events.${validateJobId(jobId)}`;
}

/** `troupe.<c>.events.>`: the subjects of the events stream. */
export function eventsSubjectFilter(cluster: string): string {
  return `${root(cluster)}.events.>`;
}

/** `TROUPE_<C>_EVENTS`: the stream of all job event logs. */
export function eventsStreamName(cluster: string): string {
  return streamName(cluster, 'EVENTS');
}

/** `troupe_<c>_<bucket>`: a KV bucket name. */
export function kvBucketName(cluster: string, bucket: KvBucket): string {
  return `troupe_${validateClusterName(cluster)}_${oneOf('kv bucket', KV_BUCKETS, bucket)}`;
}

/** `troupe_<c>_artifacts`: the object store of workspaces, trajectories and reports. */
export function objectStoreName(cluster: string): string {
  return `troupe_${validateClusterName(cluster)}_artifacts`;
}

/**
 * `troupe_<c>_banks`: the object store of memory bank file blobs, named by their SHA-256 (the
 * commit records are in the KV bucket of the same name, {@link KvBucket.BANKS}).
 */
export function bankObjectStoreName(cluster: string): string {
  return `troupe_${validateClusterName(cluster)}_banks`;
}

/** `<kind>.<id>`: an actor's key in the directory bucket. */
export function directoryKey(addr: ActorAddress): string {
  return addressTokens(addr);
}

/** `<kind>.<id>`: an actor's key in the state bucket. */
export function stateKey(addr: ActorAddress): string {
  return addressTokens(addr);
}

/** `<kind>.*`: the keys of every actor of `kind` in the state bucket (for watches and listings). */
export function stateKindFilter(kind: string): string {
  return `${validateActorKind(kind)}.*`;
}

/** The address in a `<kind>.<id>` KV key, or `undefined` when the key is not one. */
export function parseActorKey(key: string): ActorAddress | undefined {
  const parts = key.split('.');
  if (parts.length !== 2) return undefined;
  return addressOrUndefined(parts[0], parts[1]);
}

function addressOrUndefined(kind: unknown, id: unknown): ActorAddress | undefined {
  if (typeof kind !== 'string' || typeof id !== 'string') return undefined;
  if (!NamePattern.ACTOR_KIND.test(kind) || !NamePattern.ACTOR_ID.test(id)) return undefined;
  return { kind, id };
}

function parseAddressSubject(prefix: string, subject: string): ActorAddress | undefined {
  if (typeof subject !== 'string' || !subject.startsWith(prefix)) return undefined;
  const rest = subject.slice(prefix.length).split('.');
  if (rest.length !== 2) return undefined;
  return addressOrUndefined(rest[0], rest[1]);
}

/**
 * The address of an {@link actorSubject} of `cluster`, or `undefined` when `subject` is not one
 * (another cluster, another family, extra tokens, invalid kind or id).
 */
export function parseActorSubject(cluster: string, subject: string): ActorAddress | undefined {
  return parseAddressSubject(`${root(cluster)}.actor.`, subject);
}

/** The address of an {@link inboxSubject} of `cluster`, or `undefined` when `subject` is not one. */
export function parseInboxSubject(cluster: string, subject: string): ActorAddress | undefined {
  return parseAddressSubject(`${root(cluster)}.inbox.`, subject);
}

/** The job id of an {@link eventsSubject} of `cluster`, or `undefined` when `subject` is not one. */
export function parseEventsSubject(cluster: string, subject: string): string | undefined {
  const prefix = `${root(cluster)}.events.`;
  if (typeof subject !== 'string' || !subject.startsWith(prefix)) return undefined;
  const jobId = subject.slice(prefix.length);
  return NamePattern.JOB_ID.test(jobId) ? jobId : undefined;
}

/**
 * `troupe.<c>.trajectory.<sessionId>`: the trajectory events of one agent session (model calls,
 * tool calls and results, messages, compactions), in {@link trajectoryStreamName}. The session
 * id follows the actor id rule.
 */
export function trajectorySubject(cluster: string, sessionId: string): string {
  return `${root(cluster)}.trajectory.${validateActorId(sessionId)}`;
}

/** `troupe.<c>.trajectory.>`: the subjects of the trajectory stream. */
export function trajectorySubjectFilter(cluster: string): string {
  return `${root(cluster)}.trajectory.>`;
}

/** `TROUPE_<C>_TRAJECTORY`: the stream of all agent trajectories. */
export function trajectoryStreamName(cluster: string): string {
  return streamName(cluster, 'TRAJECTORY');
}

/** First token of the core NATS request-reply inbox subjects (nats.js' default `inboxPrefix`). */
export const NATS_INBOX_PREFIX = '_INBOX';

/**
 * A lease subject: `troupe.<c>.lease.<token>`, `<token>` 1 to 64 letters, digits, `_` or `-`. A
 * search's owner serves its evaluator leases there (core NATS, not on a stream). The subject is
 * outside `_INBOX` on purpose: the deployment's NATS roles give `troupe.<c>.lease.>` to the
 * coordinator account only (the search owners and the island actors that lease), so a node agent,
 * agent host or client can neither answer nor send lease requests (deploy/compose/nats.conf).
 */
export const LEASE_SUBJECT_PATTERN = /^troupe\.[a-z0-9-]{1,32}\.lease\.[A-Za-z0-9_-]{1,64}$/;

/** The rule {@link LEASE_SUBJECT_PATTERN} states, for validation messages. */
export const LEASE_SUBJECT_RULE = 'must be troupe.<cluster>.lease.<token>';

/**
 * `troupe.<c>.lease.<token>`: the lease subject named by `token` (make it unguessable, e.g. 12
 * random bytes in hex). Throws `INVALID_ARGUMENT` when `token` is not 1 to 64 of `[A-Za-z0-9_-]`.
 */
export function leaseSubject(cluster: string, token: string): string {
  const subject = `${root(cluster)}.lease.${token}`;
  if (!LEASE_SUBJECT_PATTERN.test(subject)) {
    throw invalidArgument('token', 'must match [A-Za-z0-9_-]{1,64}', token);
  }
  return subject;
}
