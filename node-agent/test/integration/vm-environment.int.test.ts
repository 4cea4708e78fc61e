import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { errorCode } from '@troupe/proto';
import { randomClusterName, waitFor } from '@troupe/testkit';
import { type Environment, GOLDEN_SNAPSHOT, VmEnvironmentBackend } from '@troupe/node-agent';
import { HOST } from './helpers';

// One VM boot under TCG takes 15–60 s on a loaded 2-core host; the file shares one warm VM.
jest.setTimeout(600_000);

const IMAGE_DIR = '/var/lib/troupe/vm-images';
const MOUSEPAD_SETTINGS = '.config/glib-2.0/settings/keyfile';

function qemuRunning(id: string): boolean {
  const out = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
  return out.includes(`troupe-env-${id}`);
}

describe('vm environment (QEMU, real guest)', () => {
  let stateDir: string;
  let backend: VmEnvironmentBackend;
  let env: Environment;
  let cluster: string;

  beforeAll(async () => {
    // The image is built offline (about 2 min the first time; cached by recipe hash).
    execFileSync(join(__dirname, '../../../deploy/images/build-vm.sh'), { stdio: 'ignore' });
    stateDir = mkdtempSync(join(os.tmpdir(), 'troupe-vm-test-'));
    cluster = randomClusterName();
    backend = new VmEnvironmentBackend({
      imageDir: IMAGE_DIR,
      stateDir,
      accel: 'tcg',
      warm: 1,
      owner: { cluster, host: HOST },
    });
    backend.startWarm();
    await backend.waitWarm({ signal: AbortSignal.timeout(300_000) });
  });

  afterAll(async () => {
    await backend?.close();
    if (stateDir) rmSync(stateDir, { recursive: true, force: true });
  });

  test('a create takes the warm VM: ready, no network device, uid 1000, golden snapshot', async () => {
    const started = Date.now();
    env = await backend.create({
      image: 'vm-desktop',
      width: 1280,
      height: 800,
      memoryMb: 1024,
      cpus: 1,
      pidsLimit: 512,
      labels: { cluster, host: HOST, actor: 'environment/test', job: '' },
    });
    // Handed out after `loadvm golden`, not booted: seconds, not a boot.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(env.kind).toBe('vm');
    const id = await env.runCommand('id -u; ls /sys/class/net');
    expect(id.stdout.trim().split('\n')).toEqual(['1000', 'lo']);
    expect(await env.listSnapshots()).toContain(GOLDEN_SNAPSHOT);
    expect(existsSync(join(stateDir, env.id, 'disk.qcow2'))).toBe(true);
    expect(qemuRunning(env.id)).toBe(true);
  });

  test('a screenshot is a PNG of the screen size', async () => {
    const png = Buffer.from((await env.screenshot()).png);
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect([png.readUInt32BE(16), png.readUInt32BE(20)]).toEqual([1280, 800]);
  });

  const settings = async (): Promise<string> =>
    Buffer.from(await env.getFile(MOUSEPAD_SETTINGS)).toString();

  test('boot → act → snapshot → change a file and an app setting → restore → machine is back', async () => {
    // The app setting is written before Mousepad starts: Mousepad rewrites its GSettings keyfile
    // from its own copy, loaded at start, whenever its state changes (also after the restore), so
    // a setting written behind a running Mousepad can be lost to its next write.
    await env.putFile(
      MOUSEPAD_SETTINGS,
      '[org/xfce/mousepad/preferences/view]\nshow-line-numbers=false\n',
    );
    const win = await env.launch(['mousepad', 'notes.txt'], {
      waitTitle: 'notes',
      timeoutMs: 90_000,
    });
    expect(win?.app).toBe('Mousepad');
    await env.act({ action_type: 'CLICK', x: win!.x + 100, y: win!.y + 120 });
    await env.act({ action_type: 'TYPING', text: 'first line' });
    await env.act({ action_type: 'HOTKEY', keys: ['ctrl', 's'] });
    await waitFor(
      async () => /^first line\n?$/.test((await env.runCommand('cat notes.txt 2>&1')).stdout),
      { timeoutMs: 60_000, message: 'notes.txt saved by mousepad' },
    );
    // Mousepad records the saved file in its session state (the same keyfile) after the save.
    await waitFor(async () => (await settings().catch(() => '')).includes('notes.txt'), {
      timeoutMs: 60_000,
      message: 'mousepad recorded its session',
    });
    const info = await env.snapshot('step-1');
    // Still in the file after the snapshot: so it was in the snapshot (nothing writes it back).
    expect(await settings()).toContain('show-line-numbers=false');
    expect(info).toMatchObject({ name: 'step-1' });
    expect(info.size).toBeGreaterThan(0);

    await env.act({ action_type: 'HOTKEY', keys: ['ctrl', 'q'] });
    await waitFor(async () => (await env.windows()).windows.length === 0, {
      timeoutMs: 60_000,
      message: 'mousepad closed',
    });
    await env.putFile('notes.txt', 'changed\n');
    await env.putFile(
      MOUSEPAD_SETTINGS,
      '[org/xfce/mousepad/preferences/view]\nshow-line-numbers=true\n',
    );

    await env.restore('step-1');
    expect(Buffer.from(await env.getFile('notes.txt')).toString()).toMatch(/^first line\n?$/);
    expect(await settings()).toContain('show-line-numbers=false');
    // The whole machine came back: the editor is running again, no reboot.
    expect((await env.windows()).windows.map((w) => w.app)).toContain('Mousepad');
    expect(await env.listSnapshots()).toEqual(expect.arrayContaining([GOLDEN_SNAPSHOT, 'step-1']));

    await env.reset();
    expect((await env.runCommand('test -e notes.txt')).exitCode).not.toBe(0);
    expect((await env.windows()).windows).toEqual([]);
  });

  test('bad input is refused with INVALID_ARGUMENT naming the field; the VM keeps working', async () => {
    const err = await env
      .act({ action_type: 'CLICK', x: 1280, y: 10 } as never)
      .catch((e: unknown) => e);
    expect(errorCode(err)).toBe('INVALID_ARGUMENT');
    expect(String(err)).toContain('action.x');
    const name = await env.snapshot('bad name').catch((e: unknown) => e);
    expect(errorCode(name)).toBe('INVALID_ARGUMENT');
    const missing = await env.restore('never-taken').catch((e: unknown) => e);
    expect(errorCode(missing)).toBe('NOT_FOUND');
    const image = await backend
      .create({
        image: 'ubuntu:latest',
        width: 1280,
        height: 800,
        memoryMb: 1024,
        cpus: 1,
        pidsLimit: 512,
        labels: { cluster, host: HOST, actor: 'environment/bad', job: '' },
      })
      .catch((e: unknown) => e);
    expect(errorCode(image)).toBe('INVALID_ARGUMENT');
    expect(String(image)).toContain('spec.image');
    await expect(env.act({ action_type: 'MOVE_TO', x: 5, y: 6 })).resolves.toMatchObject({
      pointer: { x: 5, y: 6 },
    });
  });

  test('destroy ends QEMU and removes the overlay', async () => {
    const id = env.id;
    await env.destroy();
    expect(qemuRunning(id)).toBe(false);
    expect(readdirSync(stateDir).filter((d) => d === id)).toEqual([]);
  });
});
