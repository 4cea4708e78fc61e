import { imageBuildProgressLine } from '../../src/cli/image-build-progress';

describe('imageBuildProgressLine', () => {
  test('keeps the milestones and the Dockerfile steps of a build', () => {
    expect(imageBuildProgressLine('[images] base: populating root filesystem')).toBe(
      'building image troupe-base: populating root filesystem',
    );
    expect(imageBuildProgressLine('[images] python-slim: Step 2/5 : USER root')).toBe(
      'building image troupe-python-slim: step 2/5: USER root',
    );
    expect(
      imageBuildProgressLine('[images] python-slim: built troupe-python-slim:ab12 in 95 s'),
    ).toBe('building image troupe-python-slim: built troupe-python-slim:ab12 in 95 s');
  });

  test("drops the package managers' output and lines that are not build progress", () => {
    expect(imageBuildProgressLine('[images] python-slim: Get:1 http://deb.debian.org ...')).toBe(
      undefined,
    );
    expect(imageBuildProgressLine('[images] python-slim:  ---> Running in 4f1c')).toBe(undefined);
    expect(imageBuildProgressLine('Step 2/5 : USER root')).toBe(undefined);
  });

  test('shortens long steps to the width it is given', () => {
    const line = imageBuildProgressLine(
      `[images] desktop: Step 3/9 : RUN apt-get update && apt-get install -y ${'x'.repeat(200)}`,
      60,
    );
    expect(line).toHaveLength(60);
    expect(line!.endsWith('…')).toBe(true);
    expect(line!.startsWith('building image troupe-desktop: step 3/9: RUN apt-get')).toBe(true);
  });
});
