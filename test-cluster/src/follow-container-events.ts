import type Docker from 'dockerode';

/** A Docker engine event, as much of it as the tests read. */
export interface DockerEvent {
  Action?: string;
  Actor?: { Attributes?: Record<string, string> };
}

/**
 * Follows the Docker engine's `events` (e.g. `exec_start`) of the containers of `cluster`,
 * calling `onEvent` with each parsed event. Returns the function that stops it.
 */
export async function followContainerEvents(
  tc: { readonly docker: Docker; readonly cluster: string },
  events: string[],
  onEvent: (e: DockerEvent) => void,
): Promise<() => void> {
  const stream = (await tc.docker.getEvents({
    filters: JSON.stringify({
      type: ['container'],
      event: events,
      label: [`troupe.cluster=${tc.cluster}`],
    }),
  })) as NodeJS.ReadableStream & { destroy?: () => void };
  let buffered = '';
  stream.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    let nl: number;
    while ((nl = buffered.indexOf('\n')) >= 0) {
      const line = buffered.slice(0, nl);
      buffered = buffered.slice(nl + 1);
      if (line.trim()) onEvent(JSON.parse(line) as DockerEvent);
    }
  });
  return () => stream.destroy?.();
}
