import { readFileSync } from 'node:fs';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { ActorSystem, type Logger } from '@troupe/actors';
import {
  createAgentActor,
  loadSkillsDir,
  MemoryStore,
  SkillStore,
  TrajectoryStore,
} from '@troupe/agents';
import { LlmClient, ModelRegistry, type BudgetHook } from '@troupe/llm';
import {
  type BuiltinDriverOptions,
  createModelAgentRunner,
  type EvolveBudgetContext,
} from '@troupe/benchmarks';
import { BudgetLedger, LedgerBudgetHook } from '@troupe/coordinator';
import { invalidArgument, natsConnectionOptions, TroupeError } from '@troupe/proto';

/** What {@link ModelHosting.load} needs. */
export interface ModelHostingOptions {
  /** The models file (YAML or JSON, the `ModelRegistry` format: `models: {name: {...}}`). */
  modelsFile: string;
  /** Skill folders (`<dir>/<name>/SKILL.md`) put into the cluster's skill store at start. */
  skillsDir?: string;
  /** Cluster name. */
  cluster: string;
  /** NATS connection options of the cluster (servers and credentials). */
  nats: { servers: string | string[]; user?: string; pass?: string; token?: string };
  /** Host id of the agent host. */
  hostId: string;
  /** Replicas of the trajectory stream when the host creates it. @default 1 */
  replicas?: number;
  /** Where model API keys are read from (the variables each model's `apiKeyEnv` names). */
  env: Readonly<Record<string, string | undefined>>;
  logger: Logger;
}

/**
 * Loads a models file into a registry. Every problem is one `INVALID_ARGUMENT` naming the file and
 * the field (`models.gpt-4o.inputUsdPer1M: must be ≥ 0`).
 */
export function loadModelRegistry(file: string): ModelRegistry {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw invalidArgument(
      'models',
      `must be a readable models file (${(err as Error).message})`,
      file,
    );
  }
  try {
    return file.endsWith('.json') ? ModelRegistry.fromJson(text) : ModelRegistry.fromYaml(text);
  } catch (err) {
    if (err instanceof TroupeError) {
      throw new TroupeError(err.code, `${file}: ${err.message}`, { cause: err });
    }
    throw err;
  }
}

/**
 * Model access for a cluster process: the model registry of a models file, one LLM client (keys
 * from the environment, never logged), an agent host (the `agent` actor kind, placed by the
 * coordinator like any host) whose model calls are charged to the budget ledger — to the run's
 * `budgetScope` (a job's `job:<id>`) when it names one — and the driver options that give the
 * built-in drivers the same models.
 */
export class ModelHosting {
  private connection: NatsConnection | undefined;
  private system: ActorSystem | undefined;

  private constructor(
    readonly registry: ModelRegistry,
    readonly llm: LlmClient,
    private readonly options: ModelHostingOptions,
  ) {}

  /** Loads the models (no network): a bad file fails here, before anything starts. */
  static load(options: ModelHostingOptions): ModelHosting {
    const registry = loadModelRegistry(options.modelsFile);
    const llm = new LlmClient({
      registry,
      env: options.env,
      logger: options.logger.child({ component: 'llm' }),
    });
    return new ModelHosting(registry, llm, options);
  }

  /** Starts the agent host (start it once the coordinator runs, so it registers at once). */
  async startAgentHost(): Promise<void> {
    const { options } = this;
    const connection = await connect({
      ...natsConnectionOptions(options.nats),
      name: `troupe-agents-${options.hostId}`,
      noAsyncTraces: true, // as ActorSystem's own connection: two Error allocations per request
    });
    this.connection = connection;
    // The agent definition needs its budget hook before the host system exists; the hook is
    // bound to the host's ledger client once the system is up (no call happens before that).
    const slot: { hook?: LedgerBudgetHook } = {};
    const bound = (): LedgerBudgetHook => {
      if (!slot.hook) throw new TroupeError('UNAVAILABLE', 'the agent host is starting');
      return slot.hook;
    };
    const budget: BudgetHook = {
      reserve: (amount, context) => bound().reserve(amount, context),
      settle: (id, actual) => bound().settle(id, actual),
      release: (id) => bound().release(id),
    };
    const skills = await SkillStore.open(connection, {
      cluster: options.cluster,
      ...(options.replicas !== undefined ? { replicas: options.replicas } : {}),
    });
    if (options.skillsDir) {
      const found = await loadSkillsDir(options.skillsDir);
      for (const skill of found) await skills.put(skill);
      options.logger.info(
        { dir: options.skillsDir, skills: found.map((s) => s.name) },
        'skills pushed to the skill store',
      );
    }
    const memory = await MemoryStore.open(connection, {
      cluster: options.cluster,
      ...(options.replicas !== undefined ? { replicas: options.replicas } : {}),
    });
    const agent = createAgentActor({
      llm: this.llm,
      budget,
      skills,
      memory,
      trajectories: new TrajectoryStore({
        connection,
        cluster: options.cluster,
        ...(options.replicas !== undefined ? { replicas: options.replicas } : {}),
      }),
      logger: options.logger,
    });
    this.system = await ActorSystem.start({
      cluster: options.cluster,
      connection,
      hostId: options.hostId,
      hosting: [agent],
      placement: 'none',
      ...(options.replicas !== undefined ? { replicas: options.replicas } : {}),
      logger: options.logger.child({ component: 'agent-host' }),
    });
    slot.hook = new LedgerBudgetHook({
      ledger: new BudgetLedger(this.system),
      scope: 'cluster',
      holder: options.hostId,
    });
  }

  /**
   * Options for `registerBuiltinDrivers`: the `evolve` driver's LLM operators and the
   * `issue-resolution` driver's model agents (and the `rsi` driver's roles, which run on the same
   * agent host) use these models, charged to the job's budget scope.
   */
  driverOptions(): Pick<
    BuiltinDriverOptions,
    'evolve' | 'issueResolution' | 'desktopTasks' | 'rsi' | 'rollout' | 'skillSequence'
  > {
    const ledgerHook = (
      ctx: { jobId: string; taskId: string; budgetScope?: string } & Pick<
        EvolveBudgetContext,
        'refs'
      >,
    ): BudgetHook | undefined =>
      ctx.budgetScope
        ? new LedgerBudgetHook({
            ledger: new BudgetLedger(ctx.refs),
            scope: ctx.budgetScope,
            holder: `job-task/${ctx.jobId}-${ctx.taskId}`,
          })
        : undefined;
    return {
      issueResolution: { agentRunners: [createModelAgentRunner({ models: this.registry })] },
      // This process hosts agents, so rollout episodes have somewhere to run.
      rollout: { agentHosts: true },
      desktopTasks: { models: { client: this.llm, models: this.registry, budgetFor: ledgerHook } },
      skillSequence: {
        models: { client: this.llm, models: this.registry, budgetFor: ledgerHook },
      },
      rsi: { models: this.registry, llm: { client: this.llm, budgetFor: ledgerHook } },
      evolve: {
        llm: {
          client: this.llm,
          models: this.registry,
          budgetFor: ledgerHook,
        },
      },
    };
  }

  /** Stops the agent host (running turns get `graceMs`) and closes its connection. */
  async stop(graceMs = 5_000): Promise<void> {
    await this.system?.shutdown({ graceMs });
    await this.connection?.close().catch(() => undefined);
  }
}
