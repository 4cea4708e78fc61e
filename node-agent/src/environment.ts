import type { Action } from './environment-actions';
import type { SandboxLabels } from './labels';

/** An environment kind: a backend that hosts desktops. */
export type EnvironmentKind = 'desktop' | 'vm';

/** A window as the environment's window manager lists it. */
export interface WindowInfo {
  /** X window id. */
  id: number;
  /** Title (`_NET_WM_NAME`). */
  title: string;
  /** Application class (`WM_CLASS`), e.g. `Gnumeric`, `Mousepad`. */
  app: string;
  /** Whether it has the input focus (`_NET_ACTIVE_WINDOW`). */
  focused: boolean;
  x: number;
  y: number;
  width: number;
  height: number;
}

/** The window listing: every managed window and the focused one's title. */
export interface WindowListing {
  windows: WindowInfo[];
  /** Title of the focused window, or `null`. */
  focused: string | null;
}

/** A screenshot. */
export interface Screenshot {
  /** PNG bytes. */
  png: Uint8Array;
  width: number;
  height: number;
}

/** What an action did. */
export interface ActionResult {
  /** Pointer position after the action. */
  pointer: { x: number; y: number };
  /** Whether the action ends the episode (`DONE`, `FAIL`). */
  terminal: boolean;
}

/** What a command run in an environment did. */
export interface CommandResult {
  exitCode: number;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/** Options of {@link Environment.runCommand}. */
export interface RunCommandOptions {
  /** Kill the command after this long. @default 60000 */
  timeoutMs?: number;
  /** Working directory. @default the home directory */
  cwd?: string;
  /** Bytes written to stdin. */
  stdin?: string;
  signal?: AbortSignal;
}

/** Options of {@link Environment.launch}. */
export interface LaunchOptions {
  /** Wait until a window whose title matches this regular expression is listed. */
  waitTitle?: string;
  /** How long to wait for that window. @default 30000 */
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** A snapshot of an environment. */
export interface EnvironmentSnapshotInfo {
  /** Name (`[A-Za-z0-9._-]{1,64}`). */
  name: string;
  /** Bytes it takes. */
  size: number;
}

/** The name of the snapshot every environment takes when it becomes ready; `reset` restores it. */
export const GOLDEN_SNAPSHOT = 'golden';

/**
 * A live desktop environment (a container or a VM). Every operation is served by one persistent
 * agent inside the environment, in order; none starts a process per action except `TYPING` (xdotool) and
 * `runCommand`/`launch`.
 */
export interface Environment {
  /** Environment id (`env-…`); shared by its container and volumes, or its VM's directory. */
  readonly id: string;
  /** Backend kind. */
  readonly kind: EnvironmentKind;
  /** Screen size in pixels. */
  readonly screen: { width: number; height: number };
  /** Container id, or `qemu:<pid>` for a VM; for status and tests. */
  readonly backendId: string;
  /** The whole screen as a PNG. */
  screenshot(options?: { signal?: AbortSignal }): Promise<Screenshot>;
  /** Window titles and the focused window. */
  windows(options?: { signal?: AbortSignal }): Promise<WindowListing>;
  /**
   * Performs one `computer_13` action.
   * @throws TroupeError `INVALID_ARGUMENT` naming the field for a bad action
   */
  act(action: Action, options?: { signal?: AbortSignal }): Promise<ActionResult>;
  /** Runs a command (argv, or a string for `/bin/sh -c`) as the desktop user. */
  runCommand(cmd: readonly string[] | string, options?: RunCommandOptions): Promise<CommandResult>;
  /**
   * Starts an application detached (it is not waited for), optionally until its window shows;
   * that window is returned focused (asked for when the window manager does not focus it within
   * 1 s; returned unfocused after 5 s), so the next action goes to it.
   */
  launch(cmd: readonly string[] | string, options?: LaunchOptions): Promise<WindowInfo | undefined>;
  /** A file's bytes (absolute path, or relative to the home directory). */
  getFile(path: string, options?: { maxBytes?: number; signal?: AbortSignal }): Promise<Uint8Array>;
  /** Writes a file (directories are created). */
  putFile(
    path: string,
    content: string | Uint8Array,
    options?: { mode?: number; signal?: AbortSignal },
  ): Promise<void>;
  /**
   * Saves the environment under `name`: the home directory (files and application settings) on
   * `desktop`, the whole machine (disk, memory, devices; QEMU `savevm`) on `vm`.
   */
  snapshot(name: string, options?: { signal?: AbortSignal }): Promise<EnvironmentSnapshotInfo>;
  /**
   * Puts snapshot `name` back: on `desktop` ends every application started since the session and
   * restores the home directory; on `vm` restores the whole machine (`loadvm`, no reboot), running
   * applications included.
   */
  restore(name: string, options?: { signal?: AbortSignal }): Promise<void>;
  /** The snapshots' names. */
  listSnapshots(options?: { signal?: AbortSignal }): Promise<string[]>;
  /** {@link restore} of the {@link GOLDEN_SNAPSHOT} taken at start. */
  reset(options?: { signal?: AbortSignal }): Promise<void>;
  /** Removes the environment and everything it holds. Idempotent. */
  destroy(options?: { signal?: AbortSignal }): Promise<void>;
}

/** What a backend needs to create an environment. */
export interface EnvironmentSpec {
  /** Image: a Docker image for `desktop`, a VM image (`vm-desktop`) for `vm`. @default 'troupe-desktop:latest' */
  image: string;
  /** Screen width. @default 1280 */
  width: number;
  /** Screen height. @default 800 */
  height: number;
  /** Memory limit. @default 1024 */
  memoryMb: number;
  /** CPU limit. @default 1 */
  cpus: number;
  /** Process limit. @default 512 */
  pidsLimit: number;
  /** Owner labels. */
  labels: SandboxLabels;
}

/** Options of {@link EnvironmentBackend.create}. */
export interface CreateEnvironmentOptions {
  /** Aborts creation; whatever was created is removed. */
  signal?: AbortSignal;
}

/**
 * Where environments come from. One implementation per environment kind, each in its own file,
 * listed in the node agent's table of environment backends.
 */
export interface EnvironmentBackend {
  /** The kind this backend hosts. */
  readonly kind: EnvironmentKind;
  /**
   * Creates an environment and waits until it is ready: display up, window manager running,
   * golden snapshot taken.
   * @throws TroupeError `NOT_FOUND` for a missing image, `UNAVAILABLE` when the engine fails
   */
  create(spec: EnvironmentSpec, options?: CreateEnvironmentOptions): Promise<Environment>;
  /**
   * Makes sure `image` can be used (VM images are files, not Docker images). Without it the
   * node agent's Docker image manager prepares the image.
   */
  prepare?(image: string, options?: { signal?: AbortSignal }): Promise<void>;
  /** Destroys every environment this backend instance created and still tracks. */
  close(options?: { signal?: AbortSignal }): Promise<void>;
}
