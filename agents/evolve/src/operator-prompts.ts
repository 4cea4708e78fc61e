import { type Direction } from './direction';
import { type OperatorKind } from './operator-kind';
import { type OperatorParent } from './search-operators';
import { type Program } from './program';

/** A chat message as the LLM operators send it (a subset of the LLM client's `ChatMessage`). */
export interface OperatorChatMessage {
  /** Who speaks. */
  role: 'system' | 'user';
  /** The text. */
  content: string;
}

/** What every prompt is built from. */
export interface PromptInput {
  /** What the task is (task.yaml `description`). */
  description: string;
  /** Whether higher or lower scores are better. */
  direction: Direction;
  /** Language of the programs. */
  language: string;
  /** Most characters of one program or stderr tail put into a prompt. */
  maxProgramChars: number;
}

function clip(text: string, max: number): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max)}\n… [${text.length - max} more characters]`;
}

function fenced(program: Program, max: number): string {
  return '```' + program.language + '\n' + clip(program.source, max) + '\n```';
}

function outcome(parent: OperatorParent, max: number): string {
  const r = parent.result;
  if (!r) return 'Not evaluated.';
  const lines = [`Status: ${r.status}`];
  if (r.score !== null) lines.push(`Score: ${r.score}`);
  const metrics = JSON.stringify(r.metrics);
  if (metrics !== '{}') lines.push(`Metrics: ${clip(metrics, 2_000)}`);
  if (r.stderrTail.trim() !== '') lines.push(`Stderr (tail):\n${clip(r.stderrTail, max)}`);
  return lines.join('\n');
}

function system(input: PromptInput): OperatorChatMessage {
  const better = input.direction === 'maximise' ? 'higher' : 'lower';
  return {
    role: 'system',
    content:
      `You write ${input.language} programs for an automated evaluator; ${better} scores are ` +
      'better. The evaluator runs your program in a sandbox without network and computes the ' +
      'score itself from the raw output the task asks for; printed scores are ignored. Keep the ' +
      'input/output protocol of the example programs exactly. Reply with a short plan, then the ' +
      'complete program in one fenced code block.',
  };
}

/** The messages of one operator call. */
export function buildOperatorPrompt(
  kind: Exclude<OperatorKind, 'seed'>,
  input: PromptInput,
  subjects: { seeds: readonly Program[]; parents: readonly OperatorParent[] },
): OperatorChatMessage[] {
  const max = input.maxProgramChars;
  const task = `Task:\n${input.description.trim() || '(no description)'}`;
  const parts: string[] = [task];
  switch (kind) {
    case 'draft':
      parts.push(
        'Write a new program for this task. Example programs (they show the protocol):',
        ...subjects.seeds.map((s) => fenced(s, max)),
      );
      break;
    case 'improve': {
      const [p] = subjects.parents;
      if (p)
        parts.push('Improve the score of this program:', fenced(p.program, max), outcome(p, max));
      break;
    }
    case 'crossover':
      parts.push(
        'Combine the strengths of these two programs into one better program.',
        ...subjects.parents.flatMap((p, i) => [
          `Program ${i + 1}:`,
          fenced(p.program, max),
          outcome(p, max),
        ]),
      );
      break;
    case 'debug': {
      const [p] = subjects.parents;
      if (p) {
        parts.push(
          'This program failed evaluation. Find the cause and return a fixed program.',
          fenced(p.program, max),
          outcome(p, max),
        );
      }
      break;
    }
  }
  return [system(input), { role: 'user', content: parts.join('\n\n') }];
}
