/**
 * @packageDocumentation
 * @troupe/rsi: RSIAgent on Troupe: the memory bank — files under a SHA-256 tree hash
 * over a canonical manifest, boundaries (paths, sizes, count, UTF-8) that every lesson must
 * respect, versioned commits in JetStream verified on every load, diffs and tarballs — the target
 * loop, the Phase 1–3 runners, and the Actor / Verifier / Curriculum roles on shell sandboxes
 * (`ShellRsiRoles`) and on desktop environments (`DesktopRsiRoles`). The `rsi` job driver lives in
 * `@troupe/benchmarks`.
 */
export {
  applyBankChanges,
  type ApplyBankChangesOptions,
  type BankChange,
  type BankChangeResult,
  bankChangeSetSchema,
  type BankRejection,
} from './bank/bank-changes';
export {
  BANK_COMMIT_FORMAT,
  type BankCommit,
  type BankCommitBody,
  BankCommitSchema,
  BankIdSchema,
  canonicalJson,
  commitHashOf,
} from './bank/bank-commit';
export {
  type BankDiff,
  type BankFileDiff,
  BankFileStatus,
  diffBanks,
  type DiffBanksOptions,
  formatBankDiff,
} from './bank/bank-diff';
export {
  bankIntegrityError,
  type BankIntegrityDetails,
  BankMismatch,
  isBankIntegrityError,
} from './bank/bank-integrity';
export {
  type BankLimits,
  type BankLimitsOptions,
  BankLimitsSchema,
  parseBankLimits,
} from './bank/bank-limits';
export {
  BANK_MANIFEST_HEADER,
  type BankManifestEntry,
  comparePaths,
  parseManifest,
  serializeManifest,
  sha256Hex,
  treeHashOf,
} from './bank/bank-manifest';
export { bankPathRule, bankPathSchema } from './bank/bank-path';
export {
  type BankCommitRequest,
  type BankLoadOptions,
  type BankRef,
  BankStore,
  type BankStoreOptions,
  blobName,
  commitKey,
  type LoadedBank,
} from './bank/bank-store';
export {
  BANK_TARBALL_FORMAT,
  type BankTarballMeta,
  exportBankTarball,
  type ExportBankTarballOptions,
  type ImportBankTarballOptions,
  type ImportedBank,
  importBankTarball,
} from './bank/bank-tarball';
export { BankRule, type BankViolation, checkBankFiles, isUtf8 } from './bank/bank-violation';
export {
  type BankContent,
  type BankFilesInput,
  bankViolationError,
  MemoryBank,
  type MemoryBankOptions,
} from './bank/memory-bank';
export {
  type ActorEnding,
  isGrounded,
  routeVerdict,
  type Verdict,
  type VerifierReport,
  type VerifierRoute,
  VerifierRouteSchema,
} from './loop/verdict';
export {
  type ActorRun,
  type Admission,
  type AttemptRecord,
  type BankHandle,
  type CurriculumReply,
  type CurriculumRequest,
  isTransitionReady,
  type LessonProposal,
  type ProjectOutcome,
  type RsiRoles,
  runTarget,
  type StopPolicy,
  type TargetLoopEvent,
  type TargetLoopOptions,
  type TargetResult,
  type TargetStatus,
  type Work,
} from './loop/target-loop';
export {
  admitLessons,
  type LearnedOutcome,
  type PracticeInput,
  practiseProject,
} from './loop/practice';
export { type StudyPhase, StudyRecords } from './phases/study-records';
export {
  type BankVersion,
  type FrozenBank,
  type Phase2Options,
  type Phase2AttemptLog,
  type Phase2Log,
  type Phase2Outcome,
  type Phase2ProjectLog,
  type Phase2Result,
  type Phase2TaskRecord,
  runPhase2,
} from './phases/phase2';
export {
  type Phase3Evaluation,
  type Phase3Options,
  type Phase3Result,
  type Phase3TaskRecord,
  runPhase3,
} from './phases/phase3';
export {
  bankChangesBetween,
  type BranchDetail,
  type BranchOutcome,
  type BranchRecord,
  type Phase1Options,
  type Phase1Result,
  runPhase1,
  type WaveProposal,
  type WaveRecord,
} from './phases/phase1';
export {
  ACTOR_DONE,
  ACTOR_EVOLVE,
  actorEnding,
  type RoleRunResult,
  splitFirstLine,
  throwIfInfrastructure,
  VERIFIER_EVOLVE,
  VERIFIER_HANDOFF,
  verifierReport,
} from './shell/finish-protocol';
export {
  DELETE_LIST,
  PROPOSAL_DIR,
  type ProposedChanges,
  proposalChangesFromTar,
} from './shell/proposal';
export {
  acceptedProject,
  checkShellPublication,
  CURRICULUM_REPLY_FORMAT,
  CurriculumDecisionSchema,
  MAX_FIXTURE_BYTES,
  parseCurriculumReply,
  type PracticeProject,
  type ShellPublication,
} from './shell/publication';
export {
  ACTOR_INSTRUCTION,
  bankInventory,
  CURRICULUM_INSTRUCTION,
  type RolePlace,
  SHELL_PLACE,
  VERIFIER_INSTRUCTION,
} from './shell/role-prompts';
export {
  checkPhase1Wave,
  clip,
  parsePhase1Reply,
  PHASE1_CURRICULUM_INSTRUCTION,
  PHASE1_REPLY_FORMAT,
  type Phase1CurriculumReply,
  phase1CurriculumTask,
  Phase1DecisionSchema,
} from './shell/phase1-curriculum';
export {
  type Phase1CurriculumTurn,
  Phase1Practice,
  type Phase1PracticeOptions,
  type Phase1Project,
  type Phase1RolesFactory,
  type Phase1Wave,
} from './phases/phase1-practice';
export {
  MachineBank,
  type MachineCommandResult,
  type MachineDirs,
  type MachineExec,
  shellQuote,
} from './machine/machine-bank';
export {
  DESKTOP_BANK_DIR,
  DESKTOP_PROPOSAL_DIR,
  DESKTOP_RSI_DIR,
  DesktopMachine,
  type DesktopMachineSpec,
  type DesktopMachineTimeouts,
} from './desktop/desktop-machine';
export {
  DESKTOP_ACTOR_INSTRUCTION,
  DESKTOP_CURRICULUM_INSTRUCTION,
  DESKTOP_PLACE,
  DESKTOP_VERIFIER_INSTRUCTION,
} from './desktop/desktop-prompts';
export {
  FINISH_TASK_TOOL,
  type RoleSessionOptions,
  type RoleTool,
  type RoleToolOutput,
  runRoleSession,
} from './desktop/desktop-role-session';
export {
  type DesktopEnv,
  type DesktopRsiRolesOptions,
  type DesktopRsiTask,
  DesktopRsiRoles,
  type DesktopSetup,
} from './desktop/desktop-roles';
export {
  desktopPhase1Curriculum,
  type DesktopPhase1CurriculumOptions,
} from './desktop/desktop-phase1';
export {
  BANK_DIR,
  ShellMachine,
  type ShellMachineSpec,
  type ShellMachineTimeouts,
} from './shell/shell-machine';
export {
  admitProposal,
  rsiBank,
  type RsiBank,
  rsiRoleId,
  rsiRoleTemplate,
  type ShellEnv,
  type ShellRoleModels,
  ShellRsiRoles,
  type ShellRsiRolesOptions,
} from './shell/shell-roles';
export {
  DEFAULT_SHELL_TASK_IMAGE,
  parseShellTask,
  type ShellTask,
  type ShellTaskInput,
  ShellTaskLimitsSchema,
  ShellTaskSchema,
  workspacePathRule,
} from './shell/shell-task';
