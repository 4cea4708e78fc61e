import { errorCode } from '@troupe/proto';
import { parseAgentTemplate } from '../../src/agent/agent-template';
import { AgentToolArgs } from '../../src/agent/agent-tool-args';
import {
  ownedSandboxId,
  resolveSandboxes,
  sandboxPrompt,
} from '../../src/sandboxes/session-sandboxes';

const base = { name: 'lead', instruction: 'i', model: 'm' };

test('template sandboxes: names, images and limits are validated, naming the field; the policy cannot be loosened', () => {
  const ok = parseAgentTemplate({
    ...base,
    sandboxes: { main: { image: 'troupe-busybox' }, tools: { image: 'troupe-python', cpus: 2 } },
  });
  expect(ok.sandboxes).toEqual({
    main: { image: 'troupe-busybox' },
    tools: { image: 'troupe-python', cpus: 2 },
  });
  const refused = (sandboxes: unknown): string => {
    try {
      parseAgentTemplate({ ...base, sandboxes });
    } catch (err) {
      expect(errorCode(err)).toBe('INVALID_ARGUMENT');
      return (err as Error).message;
    }
    throw new Error('accepted');
  };
  expect(refused({ Main: { image: 'x' } })).toMatch(
    /template\.sandboxes\.Main.*must match \[a-z\]\[a-z0-9-\]\{0,31\}/,
  );
  expect(refused({ main: { image: 'x', memoryMb: 8 } })).toMatch(
    /template\.sandboxes\.main\.memoryMb.*>=16/,
  );
  expect(refused({ main: { image: 'x', cpus: 1000 } })).toMatch(
    /template\.sandboxes\.main\.cpus.*<=256/,
  );
  expect(refused({ main: { image: 'no spaces' } })).toMatch(
    /template\.sandboxes\.main\.image.*must be a Docker image reference/,
  );
  // Network, user, root file system: the node agent's policy, not the template's to choose.
  expect(refused({ main: { image: 'x', network: 'bridge' } })).toMatch(
    /template\.sandboxes\.main.*network/,
  );
  expect(refused({ main: { image: 'x', user: '0' } })).toMatch(/template\.sandboxes\.main.*user/);
  const nine = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`s${i}`, { image: 'x' }]));
  expect(refused(nine)).toMatch(/template\.sandboxes.*must name at most 8 sandboxes/);
});

test('the sandbox tools take an optional `sandbox` name, `main` by default', () => {
  expect(AgentToolArgs.run_terminal_command.parse({ command: 'ls' }).sandbox).toBe('main');
  expect(AgentToolArgs.view_file.parse({ path: 'a', sandbox: 'tools' }).sandbox).toBe('tools');
  expect(
    AgentToolArgs.write_file.safeParse({ path: 'a', content: '', sandbox: 'A B' }).success,
  ).toBe(false);
  expect(AgentToolArgs.edit_file.parse({ path: 'a', old_text: 'x', new_text: 'y' }).sandbox).toBe(
    'main',
  );
});

const resolve = (o: Partial<Parameters<typeof resolveSandboxes>[0]>) =>
  resolveSandboxes({
    sessionId: 's1',
    runId: 'r1',
    stored: {},
    given: {},
    declared: undefined,
    sandboxTools: [],
    ...o,
  });

test('a run holds the sandboxes given before, given now and declared; conflicts are refused naming the field', () => {
  // The old single sandbox is `main`; given ones are kept across runs, owned ones are not.
  const r = resolve({
    stored: {
      sandboxId: 'old-main',
      sandboxes: { data: { id: 'd1' }, scratch: { id: 'x', owned: true, created: true } },
    },
    given: { sandboxes: { gpu: { id: 'g1', image: 'troupe-gpu' } } },
    declared: { tools: { image: 'troupe-python', description: 'Python' } },
  });
  expect(r).toEqual({
    ok: true,
    held: {
      main: { id: 'old-main' },
      data: { id: 'd1' },
      gpu: { id: 'g1', image: 'troupe-gpu' },
      tools: {
        id: ownedSandboxId('s1', 'r1', 'tools'),
        image: 'troupe-python',
        description: 'Python',
        owned: true,
      },
    },
    prompt: expect.stringContaining('- tools: image troupe-python; Python'),
  });
  expect(resolve({ given: { sandboxId: 'a', sandboxes: { main: 'b' } } })).toEqual({
    ok: false,
    why: expect.stringMatching(/^`run\.sandboxes\.main`: give the main sandbox once/),
  });
  expect(
    resolve({ given: { sandboxId: 'a' }, declared: { main: { image: 'troupe-busybox' } } }),
  ).toEqual({
    ok: false,
    why: expect.stringMatching(/^`run\.sandboxId`: the template declares a sandbox 'main'/),
  });
  expect(resolve({ sandboxTools: ['view_file'] })).toEqual({
    ok: false,
    why: expect.stringMatching(/^`run\.sandboxId`: required because the template holds view_file/),
  });
  expect(resolve({ sandboxTools: ['view_file'], subagent: true })).toEqual({
    ok: false,
    why: expect.stringMatching(/^`run\.sandboxes`: the parent granted no sandbox/),
  });
});

test('owned sandbox ids derive from session, run and name, and fit an actor id', () => {
  const long = 'x'.repeat(128);
  const id = ownedSandboxId(long, 'r1', 'tools');
  expect(id).toMatch(/^[A-Za-z0-9_-]{1,128}$/);
  expect(id).toHaveLength(128);
  expect(ownedSandboxId('s', 'r1', 'tools')).toBe(ownedSandboxId('s', 'r1', 'tools'));
  expect(ownedSandboxId('s', 'r2', 'tools')).not.toBe(ownedSandboxId('s', 'r1', 'tools'));
  expect(ownedSandboxId('s', 'r1', 'main')).toMatch(/^s--sbx-main-[0-9a-f]{12}$/);
});

test('the system prompt lists the sandboxes, except for a lone undescribed main', () => {
  expect(sandboxPrompt({ main: { id: 'a' } })).toBeUndefined();
  expect(sandboxPrompt({ main: { id: 'a' }, tools: { id: 'b', image: 'troupe-python' } })).toBe(
    'Your sandboxes (each with its own files and programs). The sandbox tools act on the one their `sandbox` argument names (default `main`):\n- main: image not told\n- tools: image troupe-python',
  );
});
