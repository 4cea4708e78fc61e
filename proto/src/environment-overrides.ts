import { readFileSync } from 'node:fs';

/** The variables every server maps the same way (see {@link EnvironmentOverrides.applyCommon}). */
export const COMMON_ENVIRONMENT_VARIABLES = [
  'TROUPE_CLUSTER',
  'TROUPE_NATS_URL',
  'TROUPE_NATS_USER',
  'TROUPE_NATS_PASS',
  'TROUPE_NATS_PASS_FILE',
  'TROUPE_NATS_TOKEN',
  'TROUPE_LOG_LEVEL',
  'TROUPE_REPLICAS',
] as const;

/**
 * Environment overrides of a raw (unvalidated) server config, for a server's
 * `applyEnvironment`: each variable's value is put where the server's schema will check it; only
 * its syntax is checked here, and every problem is collected in {@link issues} (named by the
 * variable), not thrown, so that all of them can be printed at once. An unset or empty variable
 * changes nothing. The raw config passed in is not modified.
 */
export class EnvironmentOverrides {
  /** The config with the overrides applied so far (a copy of the raw config). */
  readonly config: Record<string, unknown>;
  /** Syntax problems, one line per problem, `<VARIABLE>: <rule> (got '<value>')`. */
  readonly issues: string[] = [];

  constructor(
    raw: Record<string, unknown>,
    private readonly env: Readonly<Record<string, string | undefined>>,
  ) {
    this.config = { ...raw };
  }

  /** A copy of the object at `key` (a new empty one when absent), set back into the config. */
  section(key: string): Record<string, unknown> {
    const current = this.config[key];
    const copy: Record<string, unknown> =
      typeof current === 'object' && current !== null ? { ...current } : {};
    this.config[key] = copy;
    return copy;
  }

  /** Calls `apply` with the variable's value when it is set and not empty. */
  set(name: string, apply: (value: string) => void): void {
    const value = this.env[name];
    if (value !== undefined && value !== '') apply(value);
  }

  /** A non-negative integer, or undefined with an issue. */
  int(name: string, value: string): number | undefined {
    if (/^\d+$/.test(value.trim())) return Number(value.trim());
    this.issues.push(`${name}: must be a non-negative integer (got '${value}')`);
    return undefined;
  }

  /** `1/true/yes` or `0/false/no` (any case), or undefined with an issue. */
  bool(name: string, value: string): boolean | undefined {
    if (/^(1|true|yes)$/i.test(value)) return true;
    if (/^(0|false|no)$/i.test(value)) return false;
    this.issues.push(`${name}: must be 1, true, yes, 0, false or no (got '${value}')`);
    return undefined;
  }

  /** `k=v,k=v` pairs (blank parts skipped); a part without `=` is an issue and skipped. */
  pairs(name: string, value: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const part of value
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '')) {
      const eq = part.indexOf('=');
      if (eq <= 0) {
        this.issues.push(`${name}: '${part}' is not key=value (expected k=v,k=v)`);
        continue;
      }
      out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
    }
    return out;
  }

  /**
   * The {@link COMMON_ENVIRONMENT_VARIABLES}: `TROUPE_CLUSTER` → `cluster`, `TROUPE_LOG_LEVEL` →
   * `logLevel`, `TROUPE_NATS_URL` (comma-separated) → `nats.servers`, `TROUPE_NATS_USER|PASS|TOKEN`
   * → `nats.user|pass|token`, `TROUPE_NATS_PASS_FILE` → `nats.pass` read from that file (its
   * first line: a per-node credential on a Kubernetes node's disk), `TROUPE_REPLICAS` →
   * `replicas`.
   */
  applyCommon(): this {
    this.set('TROUPE_CLUSTER', (v) => (this.config['cluster'] = v));
    this.set('TROUPE_LOG_LEVEL', (v) => (this.config['logLevel'] = v));
    this.set('TROUPE_NATS_URL', (v) => {
      this.section('nats')['servers'] = v.split(',').map((s) => s.trim());
    });
    this.set('TROUPE_NATS_USER', (v) => (this.section('nats')['user'] = v));
    this.set('TROUPE_NATS_PASS', (v) => (this.section('nats')['pass'] = v));
    this.set('TROUPE_NATS_PASS_FILE', (file) => {
      if (this.env['TROUPE_NATS_PASS']) {
        this.issues.push('TROUPE_NATS_PASS_FILE: set it or TROUPE_NATS_PASS, not both');
        return;
      }
      let pass: string;
      try {
        pass = readFileSync(file, 'utf8').split(/\r?\n/)[0]!.trim();
      } catch (err) {
        const reason = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
        this.issues.push(`TROUPE_NATS_PASS_FILE: cannot read ${file} (${reason})`);
        return;
      }
      if (pass === '') this.issues.push(`TROUPE_NATS_PASS_FILE: ${file} is empty`);
      else this.section('nats')['pass'] = pass;
    });
    this.set('TROUPE_NATS_TOKEN', (v) => (this.section('nats')['token'] = v));
    this.set('TROUPE_REPLICAS', (v) => {
      const n = this.int('TROUPE_REPLICAS', v);
      if (n !== undefined) this.config['replicas'] = n;
    });
    return this;
  }

  /** The result shape of a server's `applyEnvironment`. */
  result(): { config: Record<string, unknown>; issues: string[] } {
    return { config: this.config, issues: [...this.issues] };
  }
}
