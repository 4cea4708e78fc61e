import { randomUUID } from 'node:crypto';
import { type ChatRequest, type ScriptedResponse, waitFor } from '@troupe/testkit';
import { runAgentSession, startAgentSession } from '../../src/agent/agent-session';
import { TrajectoryEventType } from '../../src/agent/trajectory-event';
import { type AgentCluster, startAgentCluster, toolResults } from './agent-cluster';

// Named sandboxes: a template declares `main` and `tools` on two images; the agent creates them on
// first use through the node agent (real Docker), grants one to a subagent, and destroys both when
// its run ends. The model is the testkit's FakeOpenAI.

let c: AgentCluster;
beforeAll(async () => {
  c = await startAgentCluster({ docker: true });
  await c.startHost('h1');
}, 180_000);
afterAll(async () => {
  await c?.stop();
}, 60_000);
afterEach(() => c.fake.reset());

type Step = (req: ChatRequest) => ScriptedResponse | Promise<ScriptedResponse>;

/** Routes requests by the start of the system message to one script per agent. */
function scripts(byInstruction: Record<string, Step[]>) {
  c.fake.setHandler((req) => {
    const system = req.body.messages[0]?.content;
    const key = Object.keys(byInstruction).find(
      (k) => typeof system === 'string' && system.startsWith(k),
    );
    return key === undefined ? undefined : byInstruction[key]?.shift()?.(req);
  });
}

const tool =
  (id: string, name: string, args: Record<string, unknown>): Step =>
  () => ({ toolCalls: [{ id, name, arguments: args }] });

// A command whose result tells the two images apart: python3 is only in troupe-python-slim.
const PROBE = 'python3 -c "print(6*7)" 2>/dev/null || echo no-python; ls /workspace';

test('two sandboxes with different images: each runs its own commands, a subagent granted only `tools` cannot use `main`, both are gone after the run', async () => {
  const sessionId = `sbx-${randomUUID().slice(0, 8)}`;
  const jobId = `job-${randomUUID().slice(0, 8)}`;
  const requests: ChatRequest[] = [];
  const live: { image: string; labels: Record<string, string>; id: string }[] = [];
  const policy: unknown[] = [];
  scripts({
    ROOT: [
      tool('p1', 'run_terminal_command', { command: `${PROBE}; echo in-main > m.txt` }),
      tool('p2', 'run_terminal_command', {
        command: `${PROBE}; echo from-parent > marker`,
        sandbox: 'tools',
      }),
      // While both sandboxes live: what Docker holds for this job.
      async () => {
        live.push(
          ...(await c.containers([`troupe.job=${jobId}`])).map((x) => ({
            image: x.Image,
            labels: x.Labels,
            id: x.Id,
          })),
        );
        for (const x of live) {
          const i = await c.inspect(x.id);
          policy.push({
            image: x.image,
            network: i.HostConfig.NetworkMode,
            user: i.Config.User,
            capDrop: i.HostConfig.CapDrop,
            readOnlyRoot: i.HostConfig.ReadonlyRootfs,
            memory: i.HostConfig.Memory,
            nanoCpus: i.HostConfig.NanoCpus,
          });
        }
        return { toolCalls: [{ id: 'p3', name: 'view_file', arguments: { path: 'm.txt' } }] };
      },
      tool('p4', 'view_file', { path: 'm.txt', sandbox: 'tools' }),
      tool('p5', 'run_terminal_command', { command: 'true', sandbox: 'gpu' }),
      tool('p6', 'run_terminal_command', { command: 'true', sandbox: 'broken' }),
      tool('p7', 'create_subagent', {
        name: 'stranger',
        instruction: 'NEVER',
        tools: ['run_terminal_command'],
        sandboxes: ['gpu'],
      }),
      tool('p8', 'create_subagent', {
        name: 'helper',
        instruction: 'HELPER',
        tools: ['run_terminal_command', 'write_file'],
        sandboxes: ['tools'],
      }),
      tool('p9', 'call_subagent', { target: 'helper', request: 'Use your sandbox.' }),
      (req) => {
        requests.push(req);
        return { toolCalls: [{ id: 'p10', name: 'finish_task', arguments: { summary: 'done' } }] };
      },
    ],
    HELPER: [
      tool('h1', 'run_terminal_command', { command: 'cat marker', sandbox: 'tools' }),
      tool('h2', 'run_terminal_command', { command: 'cat m.txt' }), // main: not granted
      tool('h3', 'write_file', { path: 'child.txt', content: 'from-child', sandbox: 'main' }),
      tool('h4', 'write_file', { path: 'child.txt', content: 'from-child', sandbox: 'tools' }),
      (req) => {
        requests.push(req);
        return { toolCalls: [{ id: 'h5', name: 'finish_task', arguments: { summary: 'ok' } }] };
      },
    ],
  });
  const result = await runAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    jobId,
    template: {
      name: 'lead',
      instruction: 'ROOT',
      model: 'fake',
      tools: [
        'run_terminal_command',
        'view_file',
        'write_file',
        'create_subagent',
        'call_subagent',
      ],
      sandboxes: {
        main: { image: 'troupe-busybox' },
        tools: { image: 'troupe-python-slim', description: 'Python 3', memoryMb: 256, cpus: 0.5 },
        broken: { image: 'no-such-image-here:1' },
      },
    },
    task: 'Probe your sandboxes.',
    signal: AbortSignal.timeout(240_000),
  });
  expect(result).toMatchObject({ stopReason: 'FINISHED', finalText: 'done', steps: 10 });
  c.fake.assertScriptConsumed();

  const parent = toolResults(requests[1]?.body);
  const child = toolResults(requests[0]?.body);
  // Different images: the same probe finds python only in `tools`; each has its own workspace.
  expect(parent['p1']).toMatch(/^exit code: 0\n--- stdout ---\nno-python\n$/);
  expect(parent['p2']).toMatch(/^exit code: 0\n--- stdout ---\n42\n$/);
  expect(parent['p3']).toContain('1\tin-main');
  expect(parent['p4']).toMatch(/^error: NOT_FOUND: cannot read m.txt/);
  // A name the session does not hold is refused naming the argument and listing the held ones.
  expect(parent['p5']).toBe(
    "error: INVALID_ARGUMENT: `arguments.sandbox`: no sandbox 'gpu'; yours: main (troupe-busybox), tools (troupe-python-slim), broken (no-such-image-here:1)",
  );
  // A sandbox that cannot be created is a tool error; the run goes on.
  expect(parent['p6']).toMatch(
    /^error: NOT_FOUND: image no-such-image-here:1 is not present on this engine/,
  );
  expect(parent['p7']).toMatch(
    /^error: PERMISSION_DENIED: `arguments.sandboxes`: a subagent may only get sandboxes you hold; you lack gpu/,
  );
  expect(parent['p8']).toMatch(/created subagent helper .*sandboxes \[tools\]/);
  expect(parent['p9']).toMatch(/subagent helper .* finished: FINISHED after 5 steps/);
  // The subagent shares `tools` (it reads the parent's file, its write lands there) and holds
  // nothing else: `main` (by default or by name) is refused.
  expect(child['h1']).toMatch(/^exit code: 0\n--- stdout ---\nfrom-parent\n$/);
  const notMain =
    "error: INVALID_ARGUMENT: `arguments.sandbox`: no sandbox 'main'; yours: tools (troupe-python-slim)";
  expect(child['h2']).toBe(notMain);
  expect(child['h3']).toBe(notMain);
  expect(child['h4']).toBe('wrote 10 bytes to child.txt');

  // The system prompts list the sandboxes each agent holds, with their images.
  const system = (r?: ChatRequest): string => {
    const content = r?.body.messages[0]?.content;
    return typeof content === 'string' ? content : '';
  };
  expect(system(requests[1])).toContain(
    '- main: image troupe-busybox\n- tools: image troupe-python-slim; Python 3\n- broken: image no-such-image-here:1',
  );
  expect(system(requests[0])).toContain('- tools: image troupe-python-slim; Python 3');
  expect(system(requests[0])).not.toContain('- main');

  // While alive, Docker held exactly the two created sandboxes of the job, one per image, with the
  // node agent's policy (no network, non-root, no capabilities) and the limits asked for.
  const events = await c.trajectories.read(sessionId);
  const start = events.find((e) => e.type === TrajectoryEventType.RUN_START);
  const ids = start?.data['sandboxes'] as Record<string, { id: string; owned: boolean }>;
  expect(Object.keys(ids)).toEqual(['main', 'tools', 'broken']);
  expect(live.map((x) => [x.image, x.labels['troupe.actor']]).sort()).toEqual(
    [
      ['troupe-busybox', `sandbox/${ids['main']?.id}`],
      ['troupe-python-slim', `sandbox/${ids['tools']?.id}`],
    ].sort(),
  );
  expect(policy).toEqual(
    expect.arrayContaining([
      {
        image: 'troupe-python-slim',
        network: 'none',
        user: '1000:1000',
        capDrop: ['ALL'],
        readOnlyRoot: true,
        memory: 256 * 1024 * 1024,
        nanoCpus: 0.5e9,
      },
      expect.objectContaining({ image: 'troupe-busybox', network: 'none', user: '1000:1000' }),
    ]),
  );
  // The labels carry the job and, through the sandbox's id, the owning session.
  const tools = live.find((x) => x.image === 'troupe-python-slim');
  expect(tools?.labels['troupe.job']).toBe(jobId);
  expect(ids['tools']?.id.startsWith(`${sessionId}--sbx-tools-`)).toBe(true);

  // The run's end destroyed both: their actors say so and Docker has nothing left for the job.
  for (const name of ['main', 'tools']) {
    const status = (await c.client
      .refOf({ kind: 'sandbox', id: ids[name]?.id ?? '' })
      .ask('status', {}, { timeoutMs: 30_000 })) as { status: string };
    expect(status.status).toBe('destroyed');
  }
  expect(await c.containers([`troupe.job=${jobId}`])).toEqual([]);
}, 300_000);

test('a cancelled run destroys the sandbox it created while a command runs in it', async () => {
  const sessionId = `sbxc-${randomUUID().slice(0, 8)}`;
  const jobId = `job-${randomUUID().slice(0, 8)}`;
  scripts({ SLOW: [tool('s1', 'run_terminal_command', { command: 'sleep 20' })] });
  const handle = await startAgentSession({
    system: c.client,
    trajectories: c.trajectories,
    sessionId,
    jobId,
    template: {
      name: 'slow',
      instruction: 'SLOW',
      model: 'fake',
      tools: ['run_terminal_command'],
      sandboxes: { main: { image: 'troupe-busybox' } },
    },
    task: 'Wait.',
    signal: AbortSignal.timeout(120_000),
  });
  // The command runs in the sandbox the session created for itself.
  await waitFor(async () => (await c.containers([`troupe.job=${jobId}`])).length === 1, {
    timeoutMs: 60_000,
    message: 'sandbox created',
  });
  await handle.cancel('enough');
  const result = await handle.result;
  expect(result).toMatchObject({ stopReason: 'CANCELLED', error: 'cancelled: enough' });
  const events = await c.trajectories.read(sessionId);
  const start = events.find((e) => e.type === TrajectoryEventType.RUN_START);
  const id = (start?.data['sandboxes'] as Record<string, { id: string }>)['main']?.id ?? '';
  // Destroyed before the end was recorded, whichever turn took the cancel: the start of the
  // creation was committed before the sandbox was created.
  const status = (await c.client
    .refOf({ kind: 'sandbox', id })
    .ask('status', {}, { timeoutMs: 30_000 })) as { status: string };
  expect(status.status).toBe('destroyed');
  expect(await c.containers([`troupe.job=${jobId}`])).toEqual([]);
}, 180_000);
