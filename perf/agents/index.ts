/**
 * perf/agents: what the agent actor costs on top of its model calls, with a zero-latency
 * FakeOpenAI, one real nats-server and the agent actor hosted in this process.
 *
 *   step_overhead_p50_ms  median over steps of (step wall time − that step's model call time):
 *                         the loop, tool dispatch (`list_agents`, no sandbox), the inbox drain,
 *                         the step's checkpoint and three trajectory publishes (the checkpoint
 *                         overlaps the next model call where that is safe). Target ≤ 2.
 *   step_overhead_middleware_p50_ms  the same with the built-in middleware enabled (doom_loop,
 *                         read_before_edit, summarise_tool_output; none acts). Target ≤ 2.
 *   step_overhead_cpu_ms  CPU time (this process plus nats-server) per step, run start and end
 *                         included, minus that of a bare model call.
 *   concurrent_sessions   sessions run at once in the throughput phase (default 500)
 *   steps_per_s           model steps per second over all of them
 *   session_bytes         JS heap per live (idle, not passivated) session after its run, by
 *                         difference of heapUsed after gc
 *
 * The baseline measured in the same run is a bare `LlmClient.chat` against the same server
 * (`model_call_p50_ms`, a two-message request); ratios are printed against it. Also printed: the
 * bare call with the request of a session's median step (history and tool), measured before and
 * between the sequential sessions (`model_call_step_request_p50_ms`), and the model call time
 * inside steps (`model_call_in_step_p50_ms`).
 * Options: `--steps N` (40 per session), `--sessions N` (5 sequential sessions for the overhead),
 * `--concurrent N` (500), `--concurrent-steps N` (4).
 */
import { connect } from '@nats-io/transport-node';
import { ActorSystem } from '@troupe/actors';
import {
  createAgentActor,
  runAgentSession,
  toolDefinition,
  TrajectoryStore,
  type TrajectoryEvent,
} from '@troupe/agents';
import { type ChatMessage, LlmClient, ModelRegistry } from '@troupe/llm';
import { readFileSync } from 'node:fs';
import { FakeOpenAI, randomClusterName, startNatsServer } from '@troupe/testkit';
import { median, nowUs, printResult, printTable, quantile, round } from '../lib/report';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const STEPS = arg('--steps', 40);
const SESSIONS = arg('--sessions', 5);
const CONCURRENT = arg('--concurrent', 500);
const CONCURRENT_STEPS = arg('--concurrent-steps', 4);

/** CPU time (user + system, ms) of this process and of the process `pid` (nats-server). */
function cpuMs(pid: number): { own: number; nats: number } {
  const own = process.cpuUsage();
  // /proc/<pid>/stat fields 14 and 15: utime and stime in clock ticks (100 per second on Linux).
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  const ticks = Number(fields[11]) + Number(fields[12]);
  return { own: (own.user + own.system) / 1000, nats: ticks * 10 };
}

function cpuSince(start: { own: number; nats: number }, pid: number) {
  const now = cpuMs(pid);
  return { own: now.own - start.own, nats: now.nats - start.nats };
}

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

async function main(): Promise<void> {
  const server = await startNatsServer();
  const fake = await FakeOpenAI.start();
  // Stateless script: list_agents until the request carries `steps - 1` tool results, then finish.
  fake.setHandler((req) => {
    const results = req.body.messages.filter((m) => m.role === 'tool').length;
    const first = req.body.messages[0]?.content;
    const system = typeof first === 'string' ? first : '';
    const steps = Number(/steps=(\d+)/.exec(system)?.[1] ?? 1);
    if (results + 1 >= steps) {
      return { toolCalls: [{ name: 'finish_task', arguments: { summary: 'done' } }] };
    }
    return { toolCalls: [{ name: 'list_agents', arguments: {} }] };
  });
  const cluster = randomClusterName();
  // The client options of the runtime's own connections (ActorSystem, `troupe --models`).
  const nc = await connect({ servers: server.url, noAsyncTraces: true });
  const registry = new ModelRegistry({
    models: {
      fake: { baseURL: fake.baseURL, model: 'fake-model', inputUsdPer1M: 0, outputUsdPer1M: 0 },
    },
  });
  const llm = new LlmClient({ registry });
  const trajectories = new TrajectoryStore({ connection: nc, cluster });
  const agent = createAgentActor({
    llm,
    trajectories,
    idleTimeoutMs: 600_000,
    // Fractional milliseconds in event timestamps, so per-step times can be measured.
    now: () => performance.timeOrigin + performance.now(),
  });
  const system = await ActorSystem.start({ cluster, connection: nc, hosting: [agent] });
  const template = (steps: number) => ({
    name: 'perf',
    instruction: `Perf agent, steps=${steps}.`,
    model: 'fake',
    tools: ['list_agents' as const],
    limits: { maxSteps: steps + 1 },
  });

  // Baseline: bare model calls through the same client and server, 200 (the first 50 are
  // warm-up) with a two-message request (`model_call_p50_ms`, as before) ...
  const model: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t0 = nowUs();
    await llm.chat({
      model: 'fake',
      messages: [
        { role: 'system', content: 'Perf agent, steps=2.' },
        { role: 'user', content: 'go' },
      ],
      signal: AbortSignal.timeout(10_000),
    });
    if (i >= 50) model.push((nowUs() - t0) / 1000);
  }
  // ... and with the request of a session's median step, 150 before the sessions and a
  // session's worth after each of them (so that they see the same machine load as the steps):
  // `model_call_step_request_p50_ms`, and the CPU time that `step_overhead_cpu_ms` subtracts.
  const stepModel: number[] = [];
  const modelCpu = { own: 0, nats: 0 };
  // The request of a session's median step: instruction, task, STEPS/2 tool rounds, the tool.
  const bareMessages: ChatMessage[] = [
    { role: 'system', content: `Perf agent, steps=${STEPS}.` },
    { role: 'user', content: 'Call list_agents until told otherwise.' },
  ];
  for (let i = 0; i < Math.floor(STEPS / 2); i++) {
    const call = { id: `call_${i}`, name: 'list_agents', argumentsText: '{}' };
    bareMessages.push({ role: 'assistant', content: null, toolCalls: [call] });
    bareMessages.push({ role: 'tool', toolCallId: call.id, content: 'subagents:\n(none)' });
  }
  const bareCalls = async (n: number, warmUp = 0): Promise<void> => {
    let cpu0 = cpuMs(server.pid);
    for (let i = 0; i < warmUp + n; i++) {
      if (i === warmUp) cpu0 = cpuMs(server.pid);
      const t0 = nowUs();
      await llm.chat({
        model: 'fake',
        messages: bareMessages,
        tools: [toolDefinition('list_agents')],
        signal: AbortSignal.timeout(10_000),
      });
      if (i >= warmUp) stepModel.push((nowUs() - t0) / 1000);
    }
    const used = cpuSince(cpu0, server.pid);
    modelCpu.own += used.own;
    modelCpu.nats += used.nats;
  };
  await bareCalls(150, 50);

  // Step overhead: sequential sessions of STEPS steps each, without middleware and then with the
  // built-in middleware enabled (doom_loop, read_before_edit, summarise_tool_output; none of
  // them acts on these steps, so what is measured is the hooks' own cost).
  const overhead: number[] = [];
  const stepMs: number[] = [];
  const modelInStepMs: number[] = [];
  let stepCpuMs = 0;
  let stepNatsCpuMs = 0;
  let modelSteps = 0;
  const middlewareOverhead: number[] = [];
  const sequential = async (withMiddleware: boolean): Promise<void> => {
    for (let s = 0; s < SESSIONS + 1; s++) {
      const sessionId = `seq-${withMiddleware ? 'mw-' : ''}${s}`;
      const cpu0 = cpuMs(server.pid);
      const result = await runAgentSession({
        system,
        trajectories,
        sessionId,
        template: {
          ...template(STEPS),
          ...(withMiddleware
            ? {
                middleware: [
                  { use: 'doom_loop' as const },
                  { use: 'read_before_edit' as const },
                  { use: 'summarise_tool_output' as const },
                ],
              }
            : {}),
        },
        task: 'Call list_agents until told otherwise.',
        signal: AbortSignal.timeout(300_000),
      });
      if (result.stopReason !== 'FINISHED')
        throw new Error(`session ${sessionId}: ${result.stopReason}`);
      if (s === 0) continue; // warm-up
      const used = cpuSince(cpu0, server.pid);
      if (!withMiddleware) {
        stepCpuMs += used.own + used.nats;
        stepNatsCpuMs += used.nats;
        modelSteps += result.steps;
        await bareCalls(STEPS);
      }
      const calls = (await trajectories.read(sessionId)).filter(
        (e: TrajectoryEvent) => e.type === 'model_call',
      );
      for (let i = 1; i < calls.length; i++) {
        const prev = calls[i - 1] as TrajectoryEvent;
        const cur = calls[i] as TrajectoryEvent;
        const step = cur.atMs - prev.atMs;
        const stepOverhead = step - Number(cur.data['latencyMs']);
        if (withMiddleware) {
          middlewareOverhead.push(stepOverhead);
          continue;
        }
        stepMs.push(step);
        overhead.push(stepOverhead);
        modelInStepMs.push(Number(cur.data['latencyMs']));
      }
    }
  };
  await sequential(false);
  await sequential(true);

  // Throughput and memory: CONCURRENT sessions at once.
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const t0 = nowUs();
  const results = await Promise.all(
    Array.from({ length: CONCURRENT }, (_, i) =>
      runAgentSession({
        system,
        trajectories,
        sessionId: `conc-${i}`,
        template: template(CONCURRENT_STEPS),
        task: 'Call list_agents until told otherwise.',
        signal: AbortSignal.timeout(600_000),
      }),
    ),
  );
  const wallS = (nowUs() - t0) / 1e6;
  const totalSteps = results.reduce((n, r) => n + r.steps, 0);
  const finished = results.filter((r) => r.stopReason === 'FINISHED').length;
  gc();
  const live = system.activationCount;
  const heapAfter = process.memoryUsage().heapUsed;
  const sessionBytes = Math.round((heapAfter - heapBefore) / Math.max(1, live));

  const modelP50 = median(model);
  const modelCpuMs = (modelCpu.own + modelCpu.nats) / stepModel.length;
  const overheadP50 = median(overhead);
  printTable('agent step (sequential sessions)', {
    steps_measured: overhead.length,
    model_call_p50_ms: round(modelP50),
    step_p50_ms: round(median(stepMs)),
    step_overhead_p50_ms: round(overheadP50),
    step_overhead_p90_ms: round(quantile(overhead, 0.9)),
    step_overhead_middleware_p50_ms: round(median(middlewareOverhead)),
    step_vs_model_call_ratio: round(median(stepMs) / modelP50),
    model_call_step_request_p50_ms: round(median(stepModel)),
    model_call_in_step_p50_ms: round(median(modelInStepMs)),
    model_call_cpu_ms: round(modelCpuMs),
    model_call_cpu_nats_ms: round(modelCpu.nats / stepModel.length),
    step_cpu_ms: round(stepCpuMs / modelSteps),
    step_cpu_nats_ms: round(stepNatsCpuMs / modelSteps),
    step_overhead_cpu_ms: round(stepCpuMs / modelSteps - modelCpuMs),
  });
  printTable(`${CONCURRENT} concurrent sessions × ${CONCURRENT_STEPS} steps`, {
    finished,
    wall_s: round(wallS),
    steps_per_s: round(totalSteps / wallS, 1),
    bare_model_calls_per_s: round(1000 / modelP50, 1),
    live_activations: live,
    session_bytes: sessionBytes,
  });
  await system.shutdown({ graceMs: 1_000 });
  await nc.close();
  await fake.close();
  await server.stop();
  printResult('agents', {
    step_overhead_p50_ms: round(overheadP50),
    step_overhead_cpu_ms: round(stepCpuMs / modelSteps - modelCpuMs),
    step_overhead_middleware_p50_ms: round(median(middlewareOverhead)),
    concurrent_sessions: CONCURRENT,
    steps_per_s: round(totalSteps / wallS, 1),
    session_bytes: sessionBytes,
    model_call_p50_ms: round(modelP50),
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${String((err as Error)?.stack ?? err)}\n`);
  process.exit(1);
});
