/**
 * The image-build progress worth a person's attention, from the node agent's build lines
 * (`[images] <name>: ...`, see deploy/images/build.sh): the milestones of each image (populating,
 * importing, docker build, built, up to date) and the Dockerfile's steps, shortened; the package
 * managers' own output is left to the log. Returns the line to print, or `undefined` to skip it.
 */
export function imageBuildProgressLine(line: string, maxChars = 110): string | undefined {
  const m = /^\[images\] ([a-z0-9][a-z0-9-]*): (.*)$/.exec(line.trimEnd());
  if (!m) return undefined;
  const [, name, rest] = m as unknown as [string, string, string];
  const step = /^Step (\d+\/\d+) : (.*)$/.exec(rest);
  const what = step
    ? `step ${step[1]}: ${step[2]}`
    : /^(installing build dependencies|populating|importing|docker build|built |troupe-\S+ is up to date)/.test(
          rest,
        )
      ? rest
      : undefined;
  if (what === undefined) return undefined;
  const text = `building image troupe-${name}: ${what}`;
  return text.length > maxChars ? `${text.slice(0, maxChars - 1)}…` : text;
}
