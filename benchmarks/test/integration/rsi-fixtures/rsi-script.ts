import { MemoryBank } from '@troupe/rsi';
import { type ChatRequest, type FakeCompletion } from '@troupe/testkit';

// The FakeOpenAI script of every RSIAgent role for the shipped rsi-shell-mini suite, shared by
// the driver's tests: Phase 1's Curriculum proposes one wave of two practice projects and then
// READY; every Actor does its work and claims DONE; every Verifier looks at the file and hands
// off; every lesson run writes one lesson named after the work. The farewell held-out answer is
// deliberately wrong, so Phase 3 scores 0.5.

type Msg = { role: string; content?: unknown };

/** A role as the requests show it. */
export type ScriptRole = 'actor' | 'verifier' | 'curriculum' | 'phase1-curriculum';

/** The role (from the system message), the run's task text and the tool results since. */
export function readRequest(req: ChatRequest): {
  role: ScriptRole;
  task: string;
  results: number;
} {
  const messages = req.body.messages as Msg[];
  const system = String(messages[0]?.content);
  const role: ScriptRole = system.startsWith('You are the Actor')
    ? 'actor'
    : system.startsWith('You are the Verifier')
      ? 'verifier'
      : system.startsWith('You are the Curriculum of Phase 1')
        ? 'phase1-curriculum'
        : 'curriculum';
  let last = 0;
  messages.forEach((m, i) => {
    if (m.role === 'user') last = i;
  });
  return {
    role,
    task: String(messages[last]?.content),
    results: messages.slice(last + 1).filter((m) => m.role === 'tool').length,
  };
}

const call = (name: string, args: Record<string, unknown>): FakeCompletion => ({
  toolCalls: [{ name, arguments: args }],
});
const sh = (command: string) => call('run_terminal_command', { command });
const finish = (summary: string) => call('finish_task', { summary });

/** [file the work writes, lesson name, the Actor's command]; farewell is deliberately wrong. */
export const WORK: [string, string, string][] = [
  ['greeting.txt', 'greeting', "printf 'hello\\n' > greeting.txt"],
  ['count.txt', 'count-lines', 'wc -l < data.txt > count.txt'],
  ['farewell.txt', 'farewell', "printf 'goodbye\\n' > farewell.txt"],
  ['wc.txt', 'count-words', 'wc -w < words.txt > wc.txt'],
  ['practice/p1/out.txt', 'practice-p1', 'cp practice/p1/in.txt practice/p1/out.txt'],
  ['practice/p2/n.txt', 'practice-p2', 'wc -l < practice/p2/rows.txt > practice/p2/n.txt'],
];

/** Every lesson's text. */
export const LESSON_TEXT = 'write files with printf\n';

/** The Phase-1 wave the Curriculum publishes first (two projects, each with its fixtures). */
export const WAVE = {
  decision: 'wave',
  projects: [
    {
      root: 'practice/p1',
      body: 'Copy practice/p1/in.txt to practice/p1/out.txt unchanged.',
      fixtures: { 'practice/p1/in.txt': 'one\ntwo\n' },
    },
    {
      root: 'practice/p2',
      body: 'Write the number of lines of practice/p2/rows.txt into practice/p2/n.txt.',
      fixtures: { 'practice/p2/rows.txt': 'a\nb\nc\n' },
    },
  ],
};

/** The scripted reply to one request (throws for a request nobody scripted). */
export function rsiScript(req: ChatRequest): FakeCompletion {
  const { role, task, results } = readRequest(req);
  const work = WORK.find(([file]) => task.includes(file));
  if (role === 'phase1-curriculum') {
    return finish(
      JSON.stringify(task.includes('No wave has run yet.') ? WAVE : { decision: 'READY' }),
    );
  }
  if (role === 'verifier') {
    return results === 0 ? sh(`cat ${work?.[0] ?? '.'}`) : finish('HANDOFF\nthe file is there');
  }
  if (role === 'actor' && task.includes('Propose what it should keep')) {
    // The lesson run continues the Actor's session: the task is earlier in its conversation.
    const conversation = JSON.stringify(req.body.messages);
    const name = WORK.find(([file]) => conversation.includes(file))?.[1] ?? 'general';
    return results === 0
      ? sh(
          `mkdir -p /proposal/lessons && printf '${LESSON_TEXT.replace('\n', '\\n')}' > /proposal/lessons/${name}.md`,
        )
      : finish('proposed one lesson');
  }
  if (role === 'actor') {
    if (!work) throw new Error(`no scripted work for: ${task.slice(0, 200)}`);
    return results === 0 ? sh(work[2]) : finish('DONE\nwrote the file');
  }
  throw new Error(`the target Curriculum is not scripted: ${task.slice(0, 200)}`);
}

/** The suite's seed bank. */
export const SEED_FILES = {
  'README.md': 'Lessons learned while working on shell tasks. One topic per file under lessons/.\n',
};

/** The bank after `lessons` were learned on the seed. */
export function bankWith(...lessons: string[]): MemoryBank {
  return MemoryBank.create({
    ...SEED_FILES,
    ...Object.fromEntries(lessons.map((l) => [`lessons/${l}.md`, LESSON_TEXT])),
  });
}
