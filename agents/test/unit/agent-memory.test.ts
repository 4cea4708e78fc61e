import { holdsTool, parseAgentTemplate } from '../../src/agent/agent-template';
import { rankMemory, type VersionedMemoryEntry } from '../../src/memory/memory-store';
import { keyFromTitle, memoryPrompt } from '../../src/memory/memory-tools';

const entry = (
  key: string,
  title: string,
  text: string,
  tags: string[] = [],
  version = 1,
): VersionedMemoryEntry => ({
  scope: 's',
  key,
  title,
  text,
  tags,
  provenance: { session: 'a', run: 'r', step: 1, atMs: 0 },
  version,
});

test('search ranks title matches above text matches and rare terms above common ones', () => {
  const entries = [
    entry('flaky', 'Flaky network tests', 'Retry the pip install when the mirror times out.'),
    entry('pip', 'Package installs', 'pip install needs --no-index offline; the mirror is local.', [
      'pip',
    ]),
    entry(
      'style',
      'Code style',
      'Run prettier before committing. The mirror of style rules is docs.',
    ),
  ];
  expect(rankMemory('pip offline', entries).map((h) => h.entry.key)).toEqual(['pip', 'flaky']);
  expect(rankMemory('flaky', entries).map((h) => h.entry.key)).toEqual(['flaky']);
  expect(rankMemory('mirror', entries)).toHaveLength(3);
  expect(rankMemory('nothing-like-it', entries)).toEqual([]);
  expect(rankMemory('  ', entries)).toEqual([]);
});

test('keys come from titles; the prompt states the scope and the tools', () => {
  expect(keyFromTitle('Flaky network tests: retry!')).toBe('flaky-network-tests-retry');
  expect(keyFromTitle('???')).toBe('note');
  expect(keyFromTitle('x'.repeat(100))).toHaveLength(64);
  expect(memoryPrompt({ scope: 'job-1', write: false })).toContain(
    'scope job-1) shared with other runs, through memory_search and memory_read (read-only)',
  );
  expect(memoryPrompt({ scope: 'job-1', write: true, policy: 'Only facts.' })).toMatch(
    /memory_write\. Only facts\.$/,
  );
});

test('memory tools are held with memory; memory_write only when writable', () => {
  const t = (memory?: object) =>
    parseAgentTemplate({ name: 'a', instruction: 'x', model: 'm', ...(memory ? { memory } : {}) });
  expect(
    ['memory_search', 'memory_read', 'memory_write'].map((n) => holdsTool(t({ scope: 'team' }), n)),
  ).toEqual([true, true, true]);
  expect(holdsTool(t({ scope: 'team', write: false }), 'memory_write')).toBe(false);
  expect(holdsTool(t(), 'memory_search')).toBe(false);
  expect(() => t({ scope: 'Team Memory' })).toThrow(/template.memory.scope`?: must match/);
});
