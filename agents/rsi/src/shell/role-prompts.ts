import { type BankLimits } from '../bank/bank-limits';
import { type MemoryBank } from '../bank/memory-bank';
import { type CurriculumRequest, type ProjectOutcome } from '../loop/target-loop';
import { ACTOR_DONE, ACTOR_EVOLVE, VERIFIER_EVOLVE, VERIFIER_HANDOFF } from './finish-protocol';
import { DELETE_LIST, PROPOSAL_DIR } from './proposal';
import { CURRICULUM_REPLY_FORMAT, type ShellPublication } from './publication';
import { BANK_DIR } from './shell-machine';

// The roles' instructions and task texts. None of them ever carries the task's evaluator: the
// official check is for Phase-3 scoring only. The Verifier's texts never carry the Actor's
// messages or the bank.

/** The sandbox workspace every role works in. */
export const WORKSPACE = '/workspace';

/**
 * Where a kind of machine keeps the roles' work, the installed bank and the Actor's proposal: the
 * task texts below name these places (the shell sandboxes' by default; the desktop roles pass
 * theirs).
 */
export interface RolePlace {
  /** The directory the work happens in (a project root is relative to it). */
  workDir: string;
  /** Where the bank is installed, read-only. */
  bankDir: string;
  /** Where the Actor writes the bank files it proposes. */
  proposalDir: string;
}

/** The shell sandboxes' places. */
export const SHELL_PLACE: RolePlace = {
  workDir: WORKSPACE,
  bankDir: BANK_DIR,
  proposalDir: PROPOSAL_DIR,
};

/** The Actor's system instruction: the task protocol and the bank's place. */
export const ACTOR_INSTRUCTION = [
  'You are the Actor. You work on a task in a Linux sandbox without network access; your working',
  `directory is ${WORKSPACE}. Use the tools to inspect files, run commands and change files.`,
  `A memory bank of lessons from earlier practice is installed read-only under ${BANK_DIR}/. Your`,
  'task lists its files with their sizes; read the ones you judge useful before you start.',
  'When you stop, call finish_task. The first line of its summary must be exactly',
  `${ACTOR_DONE} when you completed the task, or exactly ${ACTOR_EVOLVE} when you could not and need`,
  'practice; the following lines say what you did. Any other first line is no claim at all.',
  'An independent Verifier then checks the machine; you will not see it work.',
].join(' ');

/** The Verifier's system instruction: judge from machine evidence, commit a route. */
export const VERIFIER_INSTRUCTION = [
  'You are the Verifier. Another agent worked on the task below in this Linux sandbox (working',
  `directory ${WORKSPACE}); you never see its messages. Judge from evidence on the machine alone -`,
  'files, their contents, the output of commands you run - whether the task is done exactly as',
  'asked. Inspect; do not repair or complete anything. Then call finish_task. The first line of',
  `its summary must be exactly ${VERIFIER_HANDOFF} when the task is done as asked, or exactly`,
  `${VERIFIER_EVOLVE} when it is not; the following lines are your report: what you checked and`,
  'what you found, specific enough for someone to learn from.',
].join(' ');

/** The Curriculum's system instruction: design practice projects, decide READY or STALLED. */
export const CURRICULUM_INSTRUCTION = [
  'You are the Curriculum. An Actor works on a target task with a memory bank of lessons; an',
  'independent Verifier judged its attempt. You design small practice projects that teach what',
  "the Actor lacked; after each project the Actor learns from the Verifier's report, and you see",
  'the outcome. A project has a root directory (relative to the workspace, e.g.',
  '"practice/p1"), a body (the task the Actor gets) and fixtures: every file the project starts',
  'from, keyed by workspace-relative paths under the root (e.g. "practice/p1/input.txt"), as',
  'text. Answer READY when the Actor should try the target again, STALLED when more practice',
  `will not help. ${CURRICULUM_REPLY_FORMAT}`,
].join(' ');

/** The bank's complete inventory (paths and sizes, never contents) as the Actor and Curriculum see it. */
export function bankInventory(bank: MemoryBank, place: RolePlace = SHELL_PLACE): string {
  const dir = place.bankDir;
  if (bank.fileCount === 0) return `The memory bank (${dir}/) is empty.`;
  const lines = bank.manifest.map((e) => `- ${dir}/${e.path} (${e.size} bytes)`);
  return [
    `The memory bank (${dir}/, ${bank.fileCount} files, ${bank.totalBytes} bytes, tree hash ${bank.treeHash}):`,
    ...lines,
  ].join('\n');
}

/** The Actor's task text of a target attempt. */
export function actorTargetTask(
  instruction: string,
  bank: MemoryBank,
  place: RolePlace = SHELL_PLACE,
): string {
  return `Working directory: ${place.workDir}\n\nTask:\n${instruction}\n\n${bankInventory(bank, place)}`;
}

/** The Actor's task text of a practice project. */
export function actorPracticeTask(
  root: string,
  body: string,
  bank: MemoryBank,
  place: RolePlace = SHELL_PLACE,
): string {
  const w = place.workDir;
  return `Working directory: ${w}\nPractice project in ${w}/${root}\n\nTask:\n${body}\n\n${bankInventory(bank, place)}`;
}

/** The Verifier's task text: the task and where, nothing else. */
export function verifierTask(
  instruction: string,
  root?: string,
  place: RolePlace = SHELL_PLACE,
): string {
  const where = root === undefined ? '' : `\nThe project lies in ${place.workDir}/${root}.`;
  return `Working directory: ${place.workDir}${where}\n\nThe task that was worked on:\n${instruction}`;
}

/** The Actor's lesson-proposal task (a new run of its own session, its context still live). */
export function lessonTask(
  verdict: 'PASS' | 'FAIL',
  report: string,
  bank: MemoryBank,
  limits: BankLimits,
  place: RolePlace = SHELL_PLACE,
): string {
  const { bankDir, proposalDir } = place;
  const outcome =
    verdict === 'PASS'
      ? 'The Verifier confirmed from the machine that the task is done (verdict PASS).'
      : 'The Verifier found from the machine that the task is not done (verdict FAIL).';
  const proposal = [
    `The canonical memory bank is back under ${bankDir}/ (read-only). Propose what it should keep`,
    'from this attempt for future tasks: write every new or changed bank file, whole, under',
    `${proposalDir}/ at its bank path (${proposalDir}/lessons/x.md becomes ${bankDir}/lessons/x.md),`,
    `and list bank paths to delete, one a line, in ${proposalDir}/${DELETE_LIST}. Write nothing if`,
    'nothing is worth keeping. Keep lessons general and grounded in what happened.',
  ].join(' ');
  const rules = [
    `Bank rules: paths of [A-Za-z0-9._-] segments, at most ${limits.maxDepth} deep; at most`,
    `${limits.maxFiles} files, each at most ${limits.maxFileBytes} bytes, ${limits.maxTotalBytes} bytes`,
    `in all; ${limits.utf8 === 'none' ? 'any bytes' : 'UTF-8 text'}. A proposal that breaks them is`,
    'refused whole.',
  ].join(' ');
  return [
    `${outcome} Its report:\n${report}`,
    '',
    proposal,
    rules,
    '',
    bankInventory(bank, place),
    '',
    'Then call finish_task with a one-line summary of the lessons.',
  ].join('\n');
}

function publicationText(p: ShellPublication): string {
  if ('malformed' in p) return `(malformed: ${p.malformed})`;
  return `root ${p.root ?? '(none)'}: ${p.body}`;
}

function outcomeText(o: ProjectOutcome<ShellPublication>): string {
  return [
    `Project ${o.index}: ${publicationText(o.publication)}`,
    `  verdict: ${o.verdict}; bank ${o.bankBefore} -> ${o.bankAfter}${o.learningRefused ? `; lessons refused: ${o.learningRefused}` : ''}`,
    `  Verifier report: ${o.report}`,
  ].join('\n');
}

/** The Curriculum's task text of one turn: the whole request, the bank as an inventory. */
export function curriculumTask(
  instruction: string,
  request: CurriculumRequest<{ bank: MemoryBank }, ShellPublication>,
  place: RolePlace = SHELL_PLACE,
): string {
  const situation =
    request.mode === 'review'
      ? 'The Actor PASSED the target; review whether practice would still strengthen the bank (READY or STALLED with no project ends the review).'
      : `The Actor's attempt was judged ${request.verdict}.`;
  return [
    ...(request.correction !== undefined
      ? [`Your last reply was refused: ${request.correction}`, '']
      : []),
    `Target ${request.targetId}:\n${instruction}`,
    '',
    situation,
    `Verifier's report on the target:\n${request.report}`,
    '',
    bankInventory(request.bank.bank, place),
    '',
    request.outcomes.length === 0
      ? 'No practice project has run yet.'
      : `Practice so far:\n${request.outcomes.map(outcomeText).join('\n')}`,
    '',
    CURRICULUM_REPLY_FORMAT,
  ].join('\n');
}
