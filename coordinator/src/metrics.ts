import http from 'node:http';
import { type AddressInfo } from 'node:net';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';

/** Values the coordinator exposes, read at scrape time. */
export interface MetricsSource {
  isLeader(): boolean;
  queueDepth(): Record<string, number>;
  liveByKind(): Record<string, number>;
  hostsByState(): Record<string, number>;
  placements(): number;
  remindersFired(): number;
  actorsRetired(): number;
  jobsDeleted(): number;
}

/**
 * Prometheus endpoint (`GET /metrics`, `GET /healthz`) of the coordinator: queue depth,
 * activations, placements, hosts by state (dead hosts included), reminders, retired actors and deleted jobs; the budget
 * series are added with `registerBudgetMetrics` on {@link MetricsServer.registry}.
 */
export class MetricsServer {
  private server?: http.Server;
  readonly registry = new Registry();

  constructor(source: MetricsSource) {
    collectDefaultMetrics({ register: this.registry, prefix: 'troupe_coordinator_' });
    const gauge = (name: string, help: string, labelNames: string[], collect: (g: Gauge) => void) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers: [this.registry],
        collect() {
          this.reset();
          collect(this);
        },
      });
    gauge('troupe_is_leader', '1 when this coordinator leads', [], (g) =>
      g.set(source.isLeader() ? 1 : 0),
    );
    gauge('troupe_queue_depth', 'Activation requests waiting for capacity', ['kind'], (g) => {
      for (const [kind, n] of Object.entries(source.queueDepth())) g.set({ kind }, n);
    });
    gauge('troupe_activations', 'Live activations', ['kind'], (g) => {
      for (const [kind, n] of Object.entries(source.liveByKind())) g.set({ kind }, n);
    });
    gauge('troupe_hosts', 'Registered hosts by state', ['state'], (g) => {
      for (const [state, n] of Object.entries(source.hostsByState())) g.set({ state }, n);
    });
    new Counter({
      name: 'troupe_placements_total',
      help: 'Activations placed by this coordinator',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(source.placements());
      },
    });
    new Counter({
      name: 'troupe_reminders_fired_total',
      help: 'Reminders fired by this coordinator',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(source.remindersFired());
      },
    });
    new Counter({
      name: 'troupe_actors_retired_total',
      help: "Finished jobs' actors deleted by this coordinator (actorRetentionMs)",
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(source.actorsRetired());
      },
    });
    new Counter({
      name: 'troupe_jobs_deleted_total',
      help: 'Finished jobs deleted by this coordinator for their age (jobRetentionMs)',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(source.jobsDeleted());
      },
    });
  }

  /** Listens on `host:port` (port 0 picks one); returns the bound port. */
  async listen(port: number, host: string): Promise<number> {
    this.server = http.createServer((req, res) => {
      if (req.url === '/metrics') {
        this.registry.metrics().then(
          (body) => {
            res.writeHead(200, { 'content-type': this.registry.contentType });
            res.end(body);
          },
          () => {
            res.writeHead(500);
            res.end();
          },
        );
      } else if (req.url === '/healthz') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok\n');
      } else {
        res.writeHead(404);
        res.end();
      }
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(port, host, () => resolve());
    });
    return (this.server.address() as AddressInfo).port;
  }

  /** Stops listening. */
  async close(): Promise<void> {
    const s = this.server;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }
}
