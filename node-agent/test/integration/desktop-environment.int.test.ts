import { errorCode } from '@troupe/proto';
import { ensureDocker, randomClusterName, waitFor } from '@troupe/testkit';
import type Docker from 'dockerode';
import {
  DesktopEnvironmentBackend,
  type Environment,
  GOLDEN_SNAPSHOT,
  ImageManager,
} from '@troupe/node-agent';
import { HOST, leftovers, removeLeftovers } from './helpers';

// Building the desktop image the first time takes minutes (apt); later runs find it cached.
jest.setTimeout(900_000);

const MOUSEPAD_SETTINGS = '.config/glib-2.0/settings/keyfile';

describe('desktop environment (Docker, real Xvfb)', () => {
  let docker: Docker;
  let cluster: string;
  let backend: DesktopEnvironmentBackend;
  let env: Environment;
  let image: string;

  beforeAll(async () => {
    docker = await ensureDocker();
    image = (await new ImageManager({ docker }).ensure('desktop')).ref;
    cluster = randomClusterName();
    backend = new DesktopEnvironmentBackend({ docker, readyTimeoutMs: 120_000 });
    env = await backend.create({
      image,
      width: 1024,
      height: 768,
      memoryMb: 1024,
      cpus: 1,
      pidsLimit: 512,
      labels: { cluster, host: HOST, actor: 'environment/test', job: '' },
    });
  });

  afterAll(async () => {
    await backend?.close();
    if (docker && cluster) await removeLeftovers(docker, cluster);
  });

  test('the container runs under the sandbox policy, labelled for the reaper', async () => {
    const info = await docker.getContainer(env.backendId).inspect();
    const hc = info.HostConfig;
    expect(hc.NetworkMode).toBe('none');
    expect(hc.ReadonlyRootfs).toBe(true);
    expect(hc.CapDrop).toEqual(['ALL']);
    expect(hc.Memory).toBe(1024 * 1024 * 1024);
    expect(info.Config.User).toBe('1000:1000');
    expect(info.Config.Labels).toMatchObject({
      'troupe.managed': 'true',
      'troupe.cluster': cluster,
      'troupe.host': HOST,
      'troupe.actor': 'environment/test',
      'troupe.role': 'environment',
    });
    const id = await env.runCommand('id -u; ls /sys/class/net');
    expect(id.stdout.trim().split('\n')).toEqual(['1000', 'lo']);
    expect(await env.listSnapshots()).toContain(GOLDEN_SNAPSHOT);
  });

  test('a screenshot is a PNG of the screen size', async () => {
    const shot = await env.screenshot();
    expect(Buffer.from(shot.png.subarray(1, 4)).toString('latin1')).toBe('PNG');
    // IHDR width and height, big-endian, at bytes 16..24.
    const png = Buffer.from(shot.png);
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([1024, 768]);
  });

  test('boot → act → snapshot → change a file and an app setting → restore → state is back', async () => {
    const win = await env.launch(['mousepad', 'notes.txt'], {
      waitTitle: 'notes',
      timeoutMs: 60_000,
    });
    expect(win?.app).toBe('Mousepad');
    const listing = await env.windows();
    expect(listing.focused).toMatch(/notes\.txt/);
    // Type into the editor through the X server and save with ctrl+s.
    await env.act({ action_type: 'CLICK', x: win!.x + 100, y: win!.y + 120 });
    await env.act({ action_type: 'TYPING', text: 'first line' });
    await env.act({ action_type: 'HOTKEY', keys: ['ctrl', 's'] });
    await waitFor(
      async () => /^first line\n?$/.test((await env.runCommand('cat notes.txt 2>&1')).stdout),
      { timeoutMs: 30_000, message: 'notes.txt saved by mousepad' },
    );
    // Quit the editor (it rewrites its settings file on exit), then set an app setting.
    await env.act({ action_type: 'HOTKEY', keys: ['ctrl', 'q'] });
    await waitFor(async () => (await env.windows()).windows.length === 0, {
      timeoutMs: 30_000,
      message: 'mousepad closed',
    });
    await env.putFile(
      MOUSEPAD_SETTINGS,
      '[org/xfce/mousepad/preferences/view]\nshow-line-numbers=false\n',
    );
    await env.snapshot('step-1');

    await env.putFile('notes.txt', 'changed\n');
    await env.putFile(
      MOUSEPAD_SETTINGS,
      '[org/xfce/mousepad/preferences/view]\nshow-line-numbers=true\n',
    );
    await env.runCommand('mkdir -p Documents && echo x > Documents/new.txt');

    await env.restore('step-1');
    expect(Buffer.from(await env.getFile('notes.txt')).toString()).toMatch(/^first line\n?$/);
    expect(Buffer.from(await env.getFile(MOUSEPAD_SETTINGS)).toString()).toContain(
      'show-line-numbers=false',
    );
    expect((await env.runCommand('test -e Documents/new.txt')).exitCode).not.toBe(0);
    // Applications started since the session are ended: no editor could save old state back.
    expect((await env.windows()).windows).toEqual([]);

    await env.reset();
    expect((await env.runCommand('test -e notes.txt')).exitCode).not.toBe(0);
  });

  test('a window manager started after the agent survives reset; later windows are listed', async () => {
    // The agent can start before session.sh has started openbox; a restore that spared only
    // the processes alive at the agent's start killed that window manager, and every later
    // window went unlisted. Restarting openbox gives the session a window manager newer than
    // the agent, as that race did.
    await env.runCommand('pkill -x openbox');
    await waitFor(async () => (await env.runCommand('pgrep -x openbox')).exitCode === 1, {
      timeoutMs: 30_000,
      message: 'openbox ended',
    });
    await env.runCommand('setsid openbox >/dev/null 2>&1 < /dev/null &');
    await waitFor(async () => (await env.runCommand('pgrep -x openbox')).exitCode === 0, {
      timeoutMs: 30_000,
      message: 'openbox restarted',
    });
    await env.reset();
    expect((await env.runCommand('pgrep -x openbox')).exitCode).toBe(0);
    const win = await env.launch(['xterm', '-T', 'Terminal'], {
      waitTitle: 'Terminal|troupe@',
      timeoutMs: 60_000,
    });
    expect(win?.app).toBe('XTerm');
    await env.reset();
  });

  test('launch returns its window focused, so typing right after it lands there', async () => {
    // A launcher that hands over to a running instance exits 0 and the window it names already
    // exists, behind a newer one: launch brings it to the front before it returns.
    // Titles the shell cannot change (its prompt retitles an xterm otherwise).
    const xterm = (title: string) => ['xterm', '-xrm', '*allowTitleOps: false', '-T', title];
    await env.launch(xterm('first'), { waitTitle: '^first$', timeoutMs: 60_000 });
    await env.launch(xterm('second'), { waitTitle: '^second$', timeoutMs: 60_000 });
    expect((await env.windows()).focused).toBe('second');
    const first = await env.launch(['true'], { waitTitle: '^first$', timeoutMs: 60_000 });
    expect(first?.focused).toBe(true);
    expect((await env.windows()).focused).toBe('first');
    // No wait between launch and typing: the keys reach the shell in that window.
    await env.act({ action_type: 'TYPING', text: 'echo typed > ~/typed.txt\n' });
    await waitFor(async () => (await env.runCommand('cat typed.txt 2>&1')).stdout === 'typed\n', {
      timeoutMs: 30_000,
      message: 'the shell in the focused xterm ran the typed line',
    });
    await env.reset();
  });

  test('an application that dies before its window shows is reported at once, with its output', async () => {
    const started = Date.now();
    const err = await env
      .launch(['sh', '-c', 'echo "cannot open display: nowhere" >&2; exit 3'], {
        waitTitle: 'never',
        timeoutMs: 60_000,
      })
      .catch((e: unknown) => e);
    expect(errorCode(err)).toBe('INVALID_ARGUMENT');
    expect(String(err)).toContain('sh exited with status 3');
    expect(String(err)).toContain('cannot open display: nowhere');
    expect(Date.now() - started).toBeLessThan(30_000);
    // One that keeps running without a window: the deadline error says so, with its output.
    const slow = await env
      .launch(['sh', '-c', 'echo waiting for fonts; sleep 30'], {
        waitTitle: 'never',
        timeoutMs: 1_500,
      })
      .catch((e: unknown) => e);
    expect(errorCode(slow)).toBe('TIMEOUT');
    expect(String(slow)).toContain('sh still running');
    expect(String(slow)).toContain('waiting for fonts');
    await env.reset();
  });

  test('bad actions are refused with INVALID_ARGUMENT naming the field', async () => {
    const bad = async (action: unknown): Promise<unknown> =>
      env.act(action as never).then(
        () => undefined,
        (err: unknown) => err,
      );
    const outside = await bad({ action_type: 'CLICK', x: 1024, y: 10 });
    expect(errorCode(outside)).toBe('INVALID_ARGUMENT');
    expect(String(outside)).toContain('action.x');
    expect(String(outside)).toContain('screen width 1024');
    const key = await bad({ action_type: 'HOTKEY', keys: ['ctrl', 'hyperdrive'] });
    expect(errorCode(key)).toBe('INVALID_ARGUMENT');
    expect(String(key)).toContain('action.keys[1]');
    expect(String(key)).toContain('unknown key name "hyperdrive"');
    const type = await bad({ action_type: 'TELEPORT' });
    expect(errorCode(type)).toBe('INVALID_ARGUMENT');
    expect(String(type)).toContain('action.action_type');
    // The environment keeps working.
    await expect(env.act({ action_type: 'MOVE_TO', x: 5, y: 6 })).resolves.toMatchObject({
      pointer: { x: 5, y: 6 },
      terminal: false,
    });
  });

  test('destroy removes the container and its volumes', async () => {
    await env.destroy();
    const left = await leftovers(docker, cluster);
    expect(left).toEqual({ containers: [], volumes: [] });
  });
});
