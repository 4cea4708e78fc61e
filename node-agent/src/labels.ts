/**
 * Docker label keys every Troupe-managed container, volume and snapshot image carries. The reaper
 * finds orphans by these labels, so they are the one contract between a sandbox's creator and
 * whoever cleans up after it (possibly another process after a crash).
 */
export const TroupeLabel = {
  /** Always `true`: marks objects this package created. */
  MANAGED: 'troupe.managed',
  /** Cluster name (`[a-z0-9-]{1,32}`). */
  CLUSTER: 'troupe.cluster',
  /** Host id of the node agent that created the object. */
  HOST: 'troupe.host',
  /** Owning actor (`kind/id`), or `pool` for warm-pool sandboxes. */
  ACTOR: 'troupe.actor',
  /** Job id, or empty when the sandbox belongs to no job (warm pools). */
  JOB: 'troupe.job',
  /** Sandbox id (`sbx-…`); shared by a sandbox's container and volumes. */
  SANDBOX: 'troupe.sandbox',
  /** Warm pool id, on sandboxes a {@link WarmPool} created; the live pool owns them. */
  POOL: 'troupe.pool',
  /** Comma-separated policy exceptions the sandbox was created with (empty when none). */
  POLICY_EXCEPTIONS: 'troupe.policy-exceptions',
  /** What the object is: `sandbox`, `workspace`, `volume`, `snapshot` or `snapshot-staging`. */
  ROLE: 'troupe.role',
} as const;

/** One of the {@link TroupeLabel} keys. */
export type TroupeLabel = (typeof TroupeLabel)[keyof typeof TroupeLabel];

/** The owner labels a sandbox is created with. */
export interface SandboxLabels {
  /** Cluster name (`[a-z0-9-]{1,32}`). */
  cluster: string;
  /** Host id of the node agent (`[A-Za-z0-9_-]{1,64}`). */
  host: string;
  /** Owning actor, `kind/id` (or `pool` for warm-pool sandboxes). */
  actor: string;
  /** Job id. @default '' (no job) */
  job: string;
}

/** The docker `label` filters that select everything one host of one cluster manages. */
export function managedLabelFilters(cluster: string, host?: string): string[] {
  const filters = [`${TroupeLabel.MANAGED}=true`, `${TroupeLabel.CLUSTER}=${cluster}`];
  if (host !== undefined) filters.push(`${TroupeLabel.HOST}=${host}`);
  return filters;
}
