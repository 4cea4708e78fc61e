import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_BUILD_SCRIPT, ImageManager, ImageResolver } from '@troupe/node-agent';
import { ensureDocker, makeTempDir, randomClusterName, type TempDir } from '@troupe/testkit';
import type Docker from 'dockerode';

// The root config's project-level testTimeout is not applied by jest: set it here.
jest.setTimeout(120_000);

/** A recipe folder next to a copy of build.sh: a one-binary busybox image (builds in ~1 s). */
async function tinyRecipe(dir: string, name: string): Promise<string> {
  const script = path.join(dir, 'build.sh');
  await copyFile(DEFAULT_BUILD_SCRIPT, script);
  const recipe = path.join(dir, name);
  await mkdir(recipe);
  await writeFile(
    path.join(recipe, 'rootfs.sh'),
    [
      'set -eu',
      'mkdir -p "$1/bin" "$1/workspace" "$1/tmp"',
      'cp "$(command -v busybox)" "$1/bin/busybox"',
      'ln -s busybox "$1/bin/sh"',
      'chown 1000:1000 "$1/workspace"',
    ].join('\n'),
  );
  await writeFile(path.join(recipe, 'import.changes'), 'USER 1000:1000\nCMD ["/bin/sh"]\n');
  await writeFile(path.join(recipe, 'requires'), 'busybox-static\n');
  return script;
}

describe('ImageManager (Docker)', () => {
  let docker: Docker;
  let temp: TempDir;
  const name = `tiny-${randomClusterName().slice(2)}`;

  beforeAll(async () => {
    docker = await ensureDocker();
    temp = await makeTempDir('troupe-images-');
  });

  afterAll(async () => {
    const reference = [`troupe-${name}`, `troupe-${name}-r`];
    for (const img of await docker.listImages({ filters: { reference } })) {
      await docker
        .getImage(img.Id)
        .remove({ force: true })
        .catch(() => undefined);
    }
    await temp.cleanup();
  });

  test('ensure() returns the content-hashed tag of a recipe that is already built', async () => {
    const images = new ImageManager({ docker });
    await images.ensure('busybox');
    const again = await images.ensure('busybox');
    expect(again.ref).toMatch(/^troupe-busybox:[0-9a-f]{12}$/);
    expect(again.built).toBe(false);
    const info = await docker.getImage(again.ref).inspect();
    expect(info.Id).toBe(again.imageId);
    expect(info.Config.Labels).toMatchObject({ 'troupe.image': 'busybox' });
    const latest = await docker.getImage('troupe-busybox:latest').inspect();
    expect(latest.Id).toBe(again.imageId);
  });

  test('a missing image is built, or refused with the command to run when building is off', async () => {
    const script = await tinyRecipe(temp.path, name);
    const refusing = new ImageManager({ docker, buildScript: script, allowBuild: false });
    await expect(refusing.ensure(name)).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringContaining(`deploy/images/build.sh ${name}`),
    });
    const progress: string[] = [];
    const building = new ImageManager({ docker, buildScript: script });
    const [a, b] = await Promise.all([
      building.ensure(name, { onProgress: (line) => progress.push(line) }),
      building.ensure(name),
    ]);
    expect(a).toEqual(b); // one build shared by both callers
    expect(a.built).toBe(true);
    expect(a.ref).toMatch(new RegExp(`^troupe-${name}:[0-9a-f]{12}$`));
    expect(progress.some((l) => l.includes(`[images] ${name}: built`))).toBe(true);
    expect((await building.ensure(name)).built).toBe(false);
    // Changing the recipe changes the tag.
    await writeFile(path.join(temp.path, name, 'import.changes'), 'USER 1000:1000\n');
    const changed = await refusing.ensure(name).catch((err: { message: string }) => err.message);
    expect(changed).toContain('is not built');
  });

  test("the resolver builds a missing image on first use and reports the build's progress", async () => {
    const other = `${name}-r`;
    const script = await tinyRecipe(temp.path, other);
    const progress: string[] = [];
    const resolver = new ImageResolver({
      docker,
      images: new ImageManager({ docker, buildScript: script }),
      onBuildProgress: (line) => progress.push(line),
    });
    await resolver.prepare(`troupe-${other}:latest`);
    expect(progress.some((l) => l.startsWith(`[images] ${other}: populating`))).toBe(true);
    expect(progress.some((l) => l.startsWith(`[images] ${other}: built troupe-${other}:`))).toBe(
      true,
    );
    await expect(docker.getImage(`troupe-${other}:latest`).inspect()).resolves.toBeDefined();
  });

  test('refuses bad and unknown names', async () => {
    const images = new ImageManager({ docker });
    await expect(images.ensure('../etc')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(images.ensure('no-such-recipe')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});
