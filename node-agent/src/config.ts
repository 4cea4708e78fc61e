import os from 'node:os';
import {
  checkNatsAuth,
  ClusterNameSchema,
  COMMON_ENVIRONMENT_VARIABLES,
  EnvironmentOverrides,
  NamePattern,
  NatsConnectionSchema,
} from '@troupe/proto';
import { z } from 'zod';
import { SandboxSpecSchema } from './sandbox-spec';

const MiB = 1024 * 1024;

/** A host id made from this machine's hostname (`[A-Za-z0-9_-]{1,64}`). */
export function defaultHostId(): string {
  return hostIdOf(os.hostname());
}

/**
 * A host id made of a machine or node name: every run of characters outside `[A-Za-z0-9_-]`
 * becomes `-` (a Kubernetes node name such as `ip-10-0-1-2.ec2.internal` has dots, which a NATS
 * subject token cannot), cut to 64; `node` when nothing is left.
 */
export function hostIdOf(name: string): string {
  const cleaned = name
    .replace(/[^A-Za-z0-9_-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 64)
    .replace(/-+$/, '');
  return cleaned === '' ? 'node' : cleaned;
}

const spec = SandboxSpecSchema.shape;

/** One warm pool: ready sandboxes of one image with the default policy. */
export const WarmPoolEntrySchema = z
  .object({
    /** Image, e.g. `troupe-python:latest` (built from `deploy/images` on start when missing). */
    image: spec.image,
    /** Ready sandboxes to keep. @default 2 */
    size: z.int().min(0).max(64).default(2),
    /** Memory limit of the pooled sandboxes. @default 512 */
    memoryMb: spec.memoryMb,
    /** CPU limit. @default 1 */
    cpus: spec.cpus,
    /** Pids limit. @default 256 */
    pidsLimit: spec.pidsLimit,
    /** /tmp size. @default 256 */
    tmpfsMb: spec.tmpfsMb,
  })
  .strict();

const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;

/**
 * Node agent configuration (`troupe-node-agent --config node-agent.yaml`, environment overrides
 * in `main.ts`). Parsed once; every field has a default.
 */
export const ConfigSchema = z
  .object({
    /** Cluster name. @default 'default' */
    cluster: ClusterNameSchema,
    /**
     * This host's id; keep it stable across restarts (the reaper of the next process with this
     * id removes what a crashed one left) and unique in the cluster.
     * @default the hostname, cleaned to `[A-Za-z0-9_-]{1,64}`
     */
    hostId: z
      .string()
      .regex(NamePattern.HOST_ID, 'must match [A-Za-z0-9_-]{1,64}')
      .default(defaultHostId),
    /** NATS connection. @default { servers: 'nats://127.0.0.1:4222' } */
    nats: NatsConnectionSchema,
    /** Labels advertised to the coordinator (placement `labels` hints match them). @default {} */
    labels: z
      .record(
        z
          .string()
          .regex(
            /^[A-Za-z0-9][A-Za-z0-9._/-]{0,62}$/,
            'must match [A-Za-z0-9][A-Za-z0-9._/-]{0,62}',
          ),
        z.string().max(256),
      )
      .default({}),
    /**
     * Concurrent activations per kind.
     * @default sandbox: 2 × cores (at most one per 512 MiB), evaluator: cores (one per GiB),
     *   environment: cores (at most one per 2 GiB; 0 without Docker)
     */
    slots: z
      .object({
        sandbox: z.int().min(0).max(10_000).optional(),
        evaluator: z.int().min(0).max(10_000).optional(),
        environment: z.int().min(0).max(10_000).optional(),
      })
      .strict()
      .prefault({}),
    /**
     * Sandbox backend: `docker`, `process` (no isolation; needs `allowProcessBackend`), or `auto`
     * (Docker when the engine answers, else the process backend when allowed).
     * @default 'auto'
     */
    backend: z.enum(['auto', 'docker', 'process']).default('auto'),
    /** Allow the unsafe process backend (development only). @default false */
    allowProcessBackend: z.boolean().default(false),
    /** The Docker engine. */
    docker: z
      .object({
        /** @default '/var/run/docker.sock' */
        socketPath: z.string().min(1).default('/var/run/docker.sock'),
        /** @default 3000 */
        pingTimeoutMs: z.int().min(100).default(3_000),
      })
      .strict()
      .prefault({}),
    /** The process backend. */
    processBackend: z
      .object({
        /** @default `<tmpdir>/troupe-process-sandboxes` */
        rootDir: z.string().min(1).optional(),
      })
      .strict()
      .prefault({}),
    /** Sandbox actors. */
    sandbox: z
      .object({
        /** Destroy a sandbox after this long without a message. @default 1800000 */
        idleTimeoutMs: z.int().min(1_000).default(1_800_000),
        /** Exec timeout when a call gives none. @default 60000 */
        defaultExecTimeoutMs: z.int().min(1).default(60_000),
        /** Output kept per stream when a call gives no `maxOutputBytes`. @default 1048576 */
        maxOutputBytes: z.int().min(0).default(MiB),
      })
      .strict()
      .prefault({}),
    /** Environment actors (desktops for computer-use agents; Docker only). */
    environment: z
      .object({
        /** Destroy an environment after this long without a message. @default 1800000 */
        idleTimeoutMs: z.int().min(1_000).default(1_800_000),
        /** Deadline for a new desktop's display and window manager. @default 60000 */
        readyTimeoutMs: z.int().min(1_000).default(60_000),
      })
      .strict()
      .prefault({}),
    /**
     * The `vm` environment kind (QEMU guests). `auto` offers it when QEMU and the VM image
     * (`deploy/images/build-vm.sh`) are present.
     */
    vm: z
      .object({
        /** @default 'auto' */
        enabled: z.enum(['auto', 'on', 'off']).default('auto'),
        /** @default '/var/lib/troupe/vm-images' */
        imageDir: z.string().min(1).default('/var/lib/troupe/vm-images'),
        /** Per-VM overlays, sockets and records. @default `<tmpdir>/troupe-vms` */
        stateDir: z.string().min(1).optional(),
        /** @default 'qemu-system-x86_64' */
        qemuBinary: z.string().min(1).default('qemu-system-x86_64'),
        /** @default 'qemu-img' */
        qemuImgBinary: z.string().min(1).default('qemu-img'),
        /** Accelerator: `auto` probes KVM with a tiny guest at start. @default 'auto' */
        accel: z.enum(['auto', 'kvm', 'tcg']).default('auto'),
        /** Deadline of the KVM probe guest. @default 15000 */
        probeDeadlineMs: z.int().min(500).default(15_000),
        /** Live VMs at most. @default memory-aware: (memory − 2 GiB) / (1 GiB + 160 MiB) */
        maxLive: z.int().min(1).max(1_024).optional(),
        /** VMs booting at once. @default cores under KVM, half the cores (at least 1) under TCG */
        maxBoots: z.int().min(1).max(64).optional(),
        /** Booted VMs kept ready (1280×800, 1 GiB). @default 0 */
        warm: z.int().min(0).max(64).default(0),
        /** Deadline for a booting guest to be ready. @default 240000 */
        readyTimeoutMs: z.int().min(1_000).default(240_000),
      })
      .strict()
      .prefault({}),
    /** Evaluator actors and their grading sandboxes. */
    evaluator: z
      .object({
        /** @default 600000 */
        defaultTimeoutMs: z.int().min(1).default(600_000),
        /** @default 1024 */
        memoryMb: z.int().min(16).default(1024),
        /** @default 1 */
        cpus: z.number().min(0.01).default(1),
        /** @default 256 */
        pidsLimit: z.int().min(8).default(256),
        /** Grader output kept per stream (head + tail). @default 1048576 */
        maxLogBytes: z.int().min(1024).default(MiB),
        /** Grades remembered per evaluator id for replays. @default 500 */
        maxStoredGrades: z.int().min(1).max(5_000).default(500),
      })
      .strict()
      .prefault({}),
    /** Offline images (`deploy/images`). */
    images: z
      .object({
        /** Build a missing `troupe-<name>` image on first use. @default true */
        allowBuild: z.boolean().default(true),
        /** @default `deploy/images/build.sh` of this checkout */
        buildScript: z.string().min(1).optional(),
      })
      .strict()
      .prefault({}),
    /** Warm pools (Docker only); a `create` with a matching spec takes a pooled sandbox. @default [] */
    warmPools: z.array(WarmPoolEntrySchema).max(32).default([]),
    /** Orphan removal after the start-up sweep. */
    reaper: z
      .object({
        /** @default 60000 */
        intervalMs: z.int().min(100).default(60_000),
        /** @default 30000 */
        minAgeMs: z.int().min(0).default(30_000),
      })
      .strict()
      .prefault({}),
    /** How long running calls may finish on shutdown before they are aborted. @default 30000 */
    shutdownGraceMs: z.int().min(0).default(30_000),
    /**
     * Place activations here without a coordinator (`placement: 'local'`): a single process that
     * needs nothing else. @default false
     */
    standalone: z.boolean().default(false),
    /**
     * Replicas of the streams, buckets and object store this node agent creates when they do not
     * exist yet (the coordinator usually creates them first); as the coordinator's `replicas`.
     * @default 1
     */
    replicas: z.int().min(1).max(5).default(1),
    /** @default 'info' */
    logLevel: z.enum(LOG_LEVELS).default('info'),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.backend === 'process' && !c.allowProcessBackend) {
      ctx.addIssue({
        code: 'custom',
        path: ['allowProcessBackend'],
        message:
          "must be true when backend is 'process': the process backend isolates nothing (development only)",
      });
    }
    checkNatsAuth(c.nats, ctx);
    if (c.backend === 'process' && c.warmPools.length > 0) {
      ctx.addIssue({
        code: 'custom',
        path: ['warmPools'],
        message: "warm pools need the Docker backend (backend is 'process')",
      });
    }
  });

/** What a caller passes (before defaults): the YAML file's shape. */
export type NodeAgentOptions = z.input<typeof ConfigSchema>;
/** Validated configuration with defaults. */
export type NodeAgentConfig = z.output<typeof ConfigSchema>;

/** The environment variables `troupe-node-agent` reads (see {@link applyEnvironment}). */
export const ENVIRONMENT_VARIABLES = [
  ...COMMON_ENVIRONMENT_VARIABLES,
  'TROUPE_HOST_ID',
  'TROUPE_NODE_NAME',
  'TROUPE_NODE_LABELS',
  'TROUPE_SLOTS',
  'TROUPE_BACKEND',
  'TROUPE_ALLOW_PROCESS_BACKEND',
  'TROUPE_DOCKER_SOCKET',
  'TROUPE_STANDALONE',
  'TROUPE_VM',
  'TROUPE_VM_STATE_DIR',
  'TROUPE_VM_IMAGE_DIR',
  'TROUPE_VM_WARM',
] as const;

/**
 * Applies environment overrides to a raw (unvalidated) config. Values are put where the schema
 * will check them; only their syntax is checked here, and every problem is returned (named by
 * the variable), not thrown, so that all of them can be printed at once.
 *
 * `TROUPE_NATS_URL` is comma-separated; `TROUPE_NODE_LABELS` and `TROUPE_SLOTS` are `k=v,k=v`;
 * booleans accept `1/true/yes/0/false/no`.
 */
export function applyEnvironment(
  raw: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>,
): { config: Record<string, unknown>; issues: string[] } {
  const o = new EnvironmentOverrides(raw, env).applyCommon();
  // A Kubernetes DaemonSet passes its node's name (spec.nodeName), which may have dots.
  o.set('TROUPE_NODE_NAME', (v) => (o.config['hostId'] = hostIdOf(v)));
  o.set('TROUPE_HOST_ID', (v) => (o.config['hostId'] = v));
  o.set('TROUPE_BACKEND', (v) => (o.config['backend'] = v));
  o.set('TROUPE_DOCKER_SOCKET', (v) => (o.section('docker')['socketPath'] = v));
  o.set('TROUPE_VM', (v) => (o.section('vm')['enabled'] = v));
  o.set('TROUPE_VM_STATE_DIR', (v) => (o.section('vm')['stateDir'] = v));
  o.set('TROUPE_VM_IMAGE_DIR', (v) => (o.section('vm')['imageDir'] = v));
  o.set('TROUPE_VM_WARM', (v) => {
    const n = Number(v);
    if (v === '' || !Number.isInteger(n)) o.issues.push(`TROUPE_VM_WARM: ${v} is not an integer`);
    else o.section('vm')['warm'] = n;
  });
  o.set('TROUPE_NODE_LABELS', (v) => {
    o.config['labels'] = {
      ...(o.config['labels'] as object | undefined),
      ...o.pairs('TROUPE_NODE_LABELS', v),
    };
  });
  o.set('TROUPE_SLOTS', (v) => {
    const slots = o.section('slots');
    for (const [k, n] of Object.entries(o.pairs('TROUPE_SLOTS', v))) {
      const num = Number(n);
      if (n === '' || !Number.isFinite(num))
        o.issues.push(`TROUPE_SLOTS: ${k}=${n} is not a number`);
      else slots[k] = num;
    }
  });
  o.set('TROUPE_ALLOW_PROCESS_BACKEND', (v) => {
    const b = o.bool('TROUPE_ALLOW_PROCESS_BACKEND', v);
    if (b !== undefined) o.config['allowProcessBackend'] = b;
  });
  o.set('TROUPE_STANDALONE', (v) => {
    const b = o.bool('TROUPE_STANDALONE', v);
    if (b !== undefined) o.config['standalone'] = b;
  });
  return o.result();
}
