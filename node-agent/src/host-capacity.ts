import { access } from 'node:fs/promises';
import os from 'node:os';
import type Docker from 'dockerode';
import { within } from './internal/abort';

/** A sandbox backend a host can offer (advertised in its registration). */
export type HostBackend = 'docker' | 'process' | 'kvm' | 'desktop' | 'vm';

/** Cores and memory of a host. */
export interface HostResources {
  /** Cores. */
  cpu: number;
  /** Memory in MiB. */
  memMb: number;
}

/** Slots per kind: concurrent live activations this host accepts. */
export interface KindSlots {
  /** Sandboxes (each holds one container while its activation lives). */
  sandbox: number;
  /** Evaluators (each grades in one fresh container). */
  evaluator: number;
  /** Desktop environments (each holds one container with an X server and applications). */
  environment: number;
}

/** This machine's cores and memory. */
export function machineResources(): HostResources {
  return { cpu: os.availableParallelism(), memMb: Math.round(os.totalmem() / 1024 / 1024) };
}

/**
 * Default slots from the host's size: sandboxes `2 × cores` (agents mostly wait on models, so a
 * core serves two) but at most one per 512 MiB; evaluators `cores` (graders run flat out) but at
 * most one per GiB; desktop environments `cores` but at most one per 2 GiB (an idle desktop is
 * ~150 MiB, a spreadsheet open ~300 MiB; the limit is 1 GiB). Never below 1.
 */
export function defaultSlots(resources: HostResources): KindSlots {
  return {
    sandbox: Math.max(1, Math.min(2 * resources.cpu, Math.floor(resources.memMb / 512))),
    evaluator: Math.max(1, Math.min(resources.cpu, Math.floor(resources.memMb / 1024))),
    environment: Math.max(1, Math.min(resources.cpu, Math.floor(resources.memMb / 2048))),
  };
}

/** Options of {@link detectBackends}. */
export interface DetectBackendsOptions {
  /** The engine to ping; none: no `docker`. */
  docker?: Docker;
  /** How long the engine may take to answer. @default 3000 */
  pingTimeoutMs?: number;
  /** Offer the (unsafe, development-only) process backend. @default false */
  allowProcessBackend?: boolean;
  /** The KVM device. @default '/dev/kvm' */
  kvmDevice?: string;
}

/**
 * The backends this host can offer: `docker` when the engine answers a ping, `desktop` with it
 * (desktop environments), `process` when allowed, `kvm` when the KVM device is accessible (advertised for VM actors; nothing here uses
 * it yet).
 */
export async function detectBackends(options: DetectBackendsOptions): Promise<HostBackend[]> {
  const out: HostBackend[] = [];
  if (options.docker && (await dockerAnswers(options.docker, options.pingTimeoutMs ?? 3_000))) {
    // Desktop environments are containers too (their image is built on first use).
    out.push('docker', 'desktop');
  }
  if (options.allowProcessBackend === true) out.push('process');
  const kvm = await access(options.kvmDevice ?? '/dev/kvm').then(
    () => true,
    () => false,
  );
  if (kvm) out.push('kvm');
  return out;
}

/** Whether the engine answers `/_ping` within `timeoutMs`. */
export async function dockerAnswers(docker: Docker, timeoutMs: number): Promise<boolean> {
  const ping = docker.ping().then(
    () => true,
    () => false,
  );
  return (await within(ping, timeoutMs)) === true;
}
