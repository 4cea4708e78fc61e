import Docker from 'dockerode';
import { sandboxRef } from '@troupe/node-agent';
import { Header, inboxSubject } from '@troupe/proto';
import { waitFor } from '@troupe/testkit';
import { TestCluster, type TestProcess } from '@troupe/test-cluster';

// A node agent that stops answering (paused, cut off) is declared dead and fences its
// activations when it comes back; its sandboxes' containers are removed when their actors are
// activated again on it. A command that ended while nobody could record it must be recorded
// then, from the fenced activation's container, so that a caller learns it finished instead of
// running it again.

jest.setTimeout(240_000);

let tc: TestCluster;

beforeAll(async () => {
  tc = await TestCluster.start({ docker: true, actors: true });
});

afterAll(async () => {
  await tc?.stop();
});

/**
 * Pauses a node agent until the coordinator declares it dead, then lets it go on: it learns it
 * was fenced and comes back as a new incarnation.
 */
async function pauseUntilFenced(agent: TestProcess, hostId: string): Promise<void> {
  const registry = tc.coordinator.registry!;
  const incarnation = registry.get(hostId)!.info.incarnation;
  agent.child.kill('SIGSTOP');
  try {
    await waitFor(() => registry.get(hostId)?.state === 'DEAD', {
      timeoutMs: 30_000,
      message: 'the paused node agent declared dead',
    });
  } finally {
    agent.child.kill('SIGCONT');
  }
  await waitFor(
    () => {
      const r = registry.get(hostId);
      return r?.state === 'ALIVE' && r.info.incarnation !== incarnation;
    },
    { timeoutMs: 30_000, message: 'the node agent back as a new incarnation' },
  );
}

test('a command that ended unrecorded is recorded when the fenced sandbox is activated again', async () => {
  const agent = tc.spawnNodeAgent('fenced-agent', { TROUPE_SLOTS: 'sandbox=2' });
  await tc.waitForHost('fenced-agent', 60_000);
  const registry = tc.coordinator.registry!;
  const sb = sandboxRef(tc.actors, 'fenced-sb');
  await sb.ask('create', { spec: { image: 'troupe-busybox:latest' } }, { timeoutMs: 120_000 });
  const { taskId } = await sb.ask('startBackground', { cmd: 'echo finished-unseen' });
  // A second sandbox nobody calls again: its fenced container must not wait for the reaper.
  const idle = sandboxRef(tc.actors, 'fenced-idle');
  const idleCreated = await idle.ask(
    'create',
    { spec: { image: 'troupe-busybox:latest' } },
    { timeoutMs: 120_000 },
  );
  const idleContainers = () => tc.containers(['troupe.actor=sandbox/fenced-idle']);
  expect(await idleContainers()).toHaveLength(1);

  // Nobody waits on it; the agent stops answering and is declared dead.
  await pauseUntilFenced(agent, 'fenced-agent');

  // The next call activates the sandbox again, on the only host: its container ended with the
  // fenced activation, and the command's end was read from it first.
  const status = await sb.ask('status', {}, { timeoutMs: 30_000 });
  expect(status.status).toBe('lost');
  expect(status.commands).toEqual([
    expect.objectContaining({
      taskId,
      ended: expect.objectContaining({ state: 'exited', exitCode: 0, stdout: 'finished-unseen\n' }),
    }),
  ]);
  // The other fenced container is destroyed by its node agent after the 30 s grace, not left
  // to the reaper (whose first periodic sweep comes 60 s after the agent started).
  const destroyedLines = () =>
    agent
      .output()
      .split('\n')
      .filter((l) => l.includes(idleCreated.metadata.id) && l.includes('sandbox destroyed'));
  await waitFor(() => destroyedLines().length > 0, {
    timeoutMs: 50_000,
    message: 'the fenced idle sandbox’s container destroyed',
  });
  expect(destroyedLines()).toEqual([expect.stringContaining('"why":"fenced"')]);
  expect(await idleContainers()).toEqual([]);
  await sb.ask('destroy', {}, { timeoutMs: 30_000 });
  await idle.ask('destroy', {}, { timeoutMs: 30_000 });
  await waitFor(async () => (await tc.containers()).length === 0, {
    timeoutMs: 30_000,
    message: 'no container left',
  });
  // The next test's sandboxes go to its own agents.
  await agent.kill('SIGTERM');
  await waitFor(() => registry.get('fenced-agent')?.state !== 'ALIVE', {
    timeoutMs: 30_000,
    message: 'the node agent gone',
  });
});

test('a fenced agent posts its command ends, so an activation on another host records them', async () => {
  const agent = tc.spawnNodeAgent('fenced-first', { TROUPE_SLOTS: 'sandbox=2' });
  await tc.waitForHost('fenced-first', 60_000);
  const registry = tc.coordinator.registry!;
  const sb = sandboxRef(tc.actors, 'fenced-moved');
  await sb.ask('create', { spec: { image: 'troupe-busybox:latest' } }, { timeoutMs: 120_000 });
  const { taskId } = await sb.ask('startBackground', { cmd: 'echo ended-elsewhere' });
  // The end reaches the actor's inbox as a post, whichever host activates it next.
  const posted: string[] = [];
  const inbox = tc.nc.subscribe(inboxSubject(tc.cluster, sb.address), {
    callback: (_err, m) => void posted.push(m.headers?.get(Header.MSG_TYPE) ?? ''),
  });

  await pauseUntilFenced(agent, 'fenced-first');
  await waitFor(() => posted.length > 0, {
    timeoutMs: 30_000,
    message: 'the fenced activation posting its command’s end',
  });
  inbox.unsubscribe();
  expect(posted).toEqual(['commandEnded']);
  // The agent and its container go for good; the sandbox is activated on another host.
  await agent.kill('SIGKILL');
  await waitFor(() => registry.get('fenced-first')?.state !== 'ALIVE', {
    timeoutMs: 30_000,
    message: 'the killed node agent no longer alive',
  });
  const second = tc.spawnNodeAgent('fenced-second', { TROUPE_SLOTS: 'sandbox=2' });
  await tc.waitForHost('fenced-second', 60_000);

  const status = await sb.ask('status', {}, { timeoutMs: 30_000 });
  expect(status.status).toBe('lost');
  expect(status.commands).toEqual([
    expect.objectContaining({
      taskId,
      ended: expect.objectContaining({ state: 'exited', exitCode: 0, stdout: 'ended-elsewhere\n' }),
    }),
  ]);
  await sb.ask('destroy', {}, { timeoutMs: 30_000 });
  await second.kill('SIGTERM');
  await waitFor(() => registry.get('fenced-second')?.state !== 'ALIVE', {
    timeoutMs: 30_000,
    message: 'the second node agent gone',
  });
});

test('a node agent killed after its command ended: its restart reads the end from Docker', async () => {
  const registry = tc.coordinator.registry!;
  const agent = tc.spawnNodeAgent('killed-agent', { TROUPE_SLOTS: 'sandbox=2' });
  await tc.waitForHost('killed-agent', 60_000);
  const sb = sandboxRef(tc.actors, 'killed-sb');
  await sb.ask('create', { spec: { image: 'troupe-busybox:latest' } }, { timeoutMs: 120_000 });
  const { taskId } = await sb.ask('startBackground', { cmd: 'echo lost-with-the-agent; exit 3' });
  // An exit status of 126 or more may be the exec torn down with the agent (Docker could not
  // run it: 126; a signal, such as SIGPIPE once the agent's end of the output closed: 128+n),
  // not the command's verdict: it is recorded as `killed`, not as an exit, so the caller knows
  // at once that it did not finish and runs the command again.
  const torn = await sb.ask('startBackground', { cmd: 'exit 141' });
  // The sandbox recorded the commands' execs; Docker says when they have ended. Nobody asked.
  const recorded = await tc.actors.states.read(sb.address);
  const handles = (recorded?.record.data as { commands: { handle?: string }[] }).commands.map(
    (c) => c.handle,
  );
  const handle = handles[0];
  expect(handles).toEqual([expect.stringMatching(/^[0-9a-f]{64}$/), expect.any(String)]);
  const docker = new Docker();
  for (const h of handles) {
    await waitFor(async () => (await docker.getExec(h!).inspect()).Running === false, {
      timeoutMs: 30_000,
      message: 'the command ended',
    });
  }

  await agent.kill('SIGKILL');
  await waitFor(() => registry.get('killed-agent')?.state !== 'ALIVE', {
    timeoutMs: 30_000,
    message: 'the killed node agent no longer alive',
  });
  const restarted = tc.spawnNodeAgent('killed-agent', { TROUPE_SLOTS: 'sandbox=2' });
  await tc.waitForHost('killed-agent', 60_000);
  // Its start-up sweep removed the old container after reading the exit code, and told the
  // actor; the output went with the killed process.
  const ended = await waitFor(
    async () =>
      (await sb.ask('status', {}, { timeoutMs: 30_000 })).commands.find(
        (c) => c.ended?.state === 'exited',
      )?.ended,
    { timeoutMs: 30_000, message: 'the command recorded as ended' },
  );
  expect(ended).toMatchObject({ state: 'exited', exitCode: 3, stdout: '' });
  expect(ended.error).toMatch(/output went with the node agent process/);
  const commands = (await sb.ask('status', {}, { timeoutMs: 30_000 })).commands;
  expect(commands).toEqual([
    expect.objectContaining({ taskId, handle }),
    expect.objectContaining({ taskId: torn.taskId, handle: handles[1] }),
  ]);
  expect(commands[1]!.ended).toMatchObject({
    state: 'killed',
    error: 'exit code 141 after its node agent was killed: not its own verdict',
  });
  expect(commands[1]!.ended?.exitCode).toBeUndefined();
  expect(await tc.containers(['troupe.actor=sandbox/killed-sb'])).toEqual([]);
  await sb.ask('destroy', {}, { timeoutMs: 30_000 });
  await restarted.kill('SIGTERM');
});
