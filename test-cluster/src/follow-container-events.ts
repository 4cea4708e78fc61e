import type Docker from 'dockerode';
import { followDockerEvents, type DockerEvent } from '@troupe/node-agent';

export type { DockerEvent };

/**
 * Follows the Docker engine's `events` (e.g. `exec_start`) of the containers of `cluster`,
 * calling `onEvent` with each parsed event, once each, through daemon restarts (see
 * `followDockerEvents` of `@troupe/node-agent`). Returns the function that stops it.
 */
export async function followContainerEvents(
  tc: { readonly docker: Docker; readonly cluster: string },
  events: string[],
  onEvent: (e: DockerEvent) => void,
): Promise<() => void> {
  return followDockerEvents(
    tc.docker,
    { events, labels: [`troupe.cluster=${tc.cluster}`] },
    onEvent,
  );
}
