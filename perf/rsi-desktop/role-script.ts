/**
 * The scripted RSIAgent study of `benchmarks/suites/rsi-desktop-mini`: what FakeOpenAI answers for
 * every role, decided from each request alone (role from the system message, work from the run's
 * task text, step from the replies since). Shared by `perf/rsi-desktop` (the timed end-to-end
 * run) and `benchmarks/test/integration/rsi-desktop.int.test.ts`.
 *
 * - Phase 1: the Phase-1 Curriculum proposes one wave of one project, `warmup/w1` (count a
 *   fixture's lines through the terminal), which the Actor solves on a fresh desktop and the
 *   Verifier confirms (PASS, lesson `lessons/warmup-w1.md`: bank v2); asked for wave 2, it answers
 *   READY.
 * - Development task `write-hello`: the first attempt (no lesson about exact text) types the wrong text
 *   and says EVOLVE; the Verifier reads `~/hello.txt` and says EVOLVE (FAIL). The Actor proposes
 *   `lessons/exact-text.md`; the Curriculum publishes `practice/p1` (copy a phrase file), which
 *   the practice Actor solves through the terminal and the Verifier confirms (PASS, lesson
 *   `lessons/practice-p1.md`); the Curriculum answers READY; the fresh attempt (the bank now has
 *   lessons) types the right text: PASS, nothing more learned.
 * - Held-out: `count-lines` solved (score 1), `rename-report` done wrong (`cp`, not `mv`: 0).
 *
 * The Verifier's verdicts come from what its commands read on the machine, not from the script.
 */
import { type ChatRequest, type FakeCompletion } from '@troupe/testkit';

/** The lessons the scripted Actor proposes (bank path → text). */
export const SCRIPTED_LESSONS: Readonly<Record<string, string>> = {
  'lessons/exact-text.md':
    'Write the exact text the task quotes, word for word: "hello world", not "hello".\n',
  'lessons/practice-p1.md': 'Copy quoted text from a file with cat instead of retyping it.\n',
};

/** The lesson Phase 1's practised project teaches (bank path → text). */
export const PHASE1_LESSONS: Readonly<Record<string, string>> = {
  'lessons/warmup-w1.md':
    'Count the lines of a file with wc -l < file: it prints the number alone.\n',
};

/** The seed bank of the suite (its `seedBank`). */
export const SEED_BANK: Readonly<Record<string, string>> = {
  'README.md':
    'Lessons learned while working on desktop tasks. One topic per file under lessons/.\n',
};

/** The Curriculum's practice project. */
export const PRACTICE = {
  decision: 'project',
  root: 'practice/p1',
  body: 'Use the terminal to write the text of practice/p1/phrase.txt into practice/p1/out.txt.',
  fixtures: { 'practice/p1/phrase.txt': 'hello world\n' },
};

/** Phase 1's wave: its one project. */
export const WARMUP = {
  root: 'warmup/w1',
  body: 'Use the terminal to write the number of lines of warmup/w1/list.txt into warmup/w1/count.txt.',
  fixtures: { 'warmup/w1/list.txt': 'alpha\nbeta\ngamma\n' },
};

type Part = { type?: string; text?: string };
type Msg = { role: string; content?: unknown };

const textOf = (content: unknown): string =>
  typeof content === 'string'
    ? content
    : Array.isArray(content)
      ? (content as Part[])
          .filter((p) => p.type === 'text')
          .map((p) => p.text ?? '')
          .join('\n')
      : '';

/** The role a request is for, from its system message. */
export function roleOf(req: ChatRequest): 'actor' | 'verifier' | 'curriculum' {
  const system = textOf((req.body.messages as Msg[])[0]?.content);
  if (system.startsWith('You are the Actor')) return 'actor';
  if (system.startsWith('You are the Verifier')) return 'verifier';
  return 'curriculum';
}

/** The run's task text (the last user turn that is not a screen update) and the replies since. */
function runOf(req: ChatRequest) {
  const messages = req.body.messages as Msg[];
  let anchor = 0;
  messages.forEach((m, i) => {
    if (m.role !== 'user') return;
    const t = textOf(m.content);
    if (!t.startsWith('The screen now:') && !t.startsWith('Continue with')) anchor = i;
  });
  const since = messages.slice(anchor + 1);
  const tools = since.filter((m) => m.role === 'tool');
  return {
    task: textOf(messages[anchor]?.content),
    step: since.filter((m) => m.role === 'assistant').length,
    lastTool: textOf(tools.at(-1)?.content),
    conversation: messages.map((m) => textOf(m.content)).join('\n'),
  };
}

const call = (name: string, args: Record<string, unknown>): FakeCompletion => ({
  toolCalls: [{ name, arguments: args }],
  usage: { prompt_tokens: 1_000, completion_tokens: 20 },
});
const finish = (summary: string) => call('finish_task', { summary });
const type = (text: string) => call('computer', { action_type: 'TYPING', text });

/** One run's calls, step by step (the last repeats if the run asks for more). */
const steps = (step: number, list: FakeCompletion[]): FakeCompletion =>
  list[Math.min(step, list.length - 1)] as FakeCompletion;

function actor(req: ChatRequest): FakeCompletion {
  const { task, step, conversation } = runOf(req);
  if (task.includes('Propose what it should keep')) {
    const write = (path: string) =>
      call('write_file', {
        path: `/tmp/rsi/proposal/${path}`,
        content: SCRIPTED_LESSONS[path] ?? PHASE1_LESSONS[path],
      });
    if (conversation.includes(WARMUP.root)) {
      return steps(step, [write('lessons/warmup-w1.md'), finish('one lesson: count with wc')]);
    }
    if (conversation.includes('Practice project')) {
      return steps(step, [write('lessons/practice-p1.md'), finish('one lesson: copy with cat')]);
    }
    if (!conversation.includes('lessons/exact-text.md')) {
      return steps(step, [write('lessons/exact-text.md'), finish('one lesson: exact text')]);
    }
    return finish('nothing new to keep');
  }
  if (task.includes('Practice project') && task.includes(WARMUP.root)) {
    return steps(step, [
      type('wc -l < ~/warmup/w1/list.txt > ~/warmup/w1/count.txt\n'),
      finish('DONE\ncounted the lines'),
    ]);
  }
  if (task.includes('Practice project')) {
    return steps(step, [
      type('cat ~/practice/p1/phrase.txt > ~/practice/p1/out.txt\n'),
      finish('DONE\ncopied the phrase'),
    ]);
  }
  if (task.includes('hello.txt')) {
    if (!task.includes('lessons/exact-text.md')) {
      return steps(step, [
        call('read_file', { path: 'README.md' }),
        type("echo 'hello' > ~/hello.txt\n"),
        finish('EVOLVE\nI wrote hello; I am not sure it is the text asked for'),
      ]);
    }
    return steps(step, [
      call('read_file', { path: 'lessons/exact-text.md' }),
      type("echo 'hello world' > ~/hello.txt\n"),
      finish('DONE\nwrote the exact text'),
    ]);
  }
  if (task.includes('data.txt')) {
    return steps(step, [type('wc -l < ~/data.txt > ~/count.txt\n'), finish('DONE\ncounted')]);
  }
  if (task.includes('report-old.txt')) {
    // Wrong on purpose: the old file stays.
    return steps(step, [
      type('cp ~/report-old.txt ~/report-2026.txt\n'),
      finish('DONE\nthe report has its new name'),
    ]);
  }
  return finish('EVOLVE\nunknown task');
}

function verifier(req: ChatRequest): FakeCompletion {
  const { task, step, lastTool } = runOf(req);
  const [file, want] = task.includes(WARMUP.root)
    ? ['~/warmup/w1/count.txt', '3']
    : task.includes('practice/p1')
      ? ['~/practice/p1/out.txt', 'hello world']
      : ['~/hello.txt', 'hello world'];
  // The Actor's typed command runs in the desktop's terminal, on its own time: the file may be
  // open but not yet written when the Verifier looks. Like a careful checker, wait (at most 20 s)
  // until it holds something, then read it.
  if (step === 0) {
    return call('run_command', {
      command: `timeout 20 sh -c 'until [ -s ${file} ]; do sleep 0.1; done'; cat ${file}`,
    });
  }
  const got = lastTool.split('\n').slice(1).join('\n').trim();
  return got === want
    ? finish(`HANDOFF\n${file} holds exactly "${want}"`)
    : finish(`EVOLVE\n${file} holds ${JSON.stringify(got)}, not "${want}"`);
}

function curriculum(req: ChatRequest): FakeCompletion {
  const { task } = runOf(req);
  const system = textOf((req.body.messages as Msg[])[0]?.content);
  if (system.startsWith('You are the Curriculum of Phase 1')) {
    return task.includes('This is wave 1;')
      ? finish(JSON.stringify({ decision: 'wave', projects: [WARMUP] }))
      : finish(JSON.stringify({ decision: 'READY' }));
  }
  return task.includes('No practice project has run yet.')
    ? finish(JSON.stringify(PRACTICE))
    : finish(JSON.stringify({ decision: 'READY' }));
}

/** FakeOpenAI's handler for the scripted study. */
export function scriptedStudy(req: ChatRequest): FakeCompletion {
  switch (roleOf(req)) {
    case 'actor':
      return actor(req);
    case 'verifier':
      return verifier(req);
    case 'curriculum':
      return curriculum(req);
  }
}
