import type { Duplex } from 'node:stream';
import { PassThrough } from 'node:stream';
import { ErrorCode, TroupeError } from '@troupe/proto';
import type Docker from 'dockerode';
import { AgentChannel } from './agent-channel';
import { dockerError } from './docker-errors';

/**
 * Starts `cmd` in `container` with one long-lived `docker exec` and connects an
 * {@link AgentChannel} to its stdin/stdout; the channel closes with `UNAVAILABLE` (and the tail
 * of the agent's stderr) when the exec ends.
 */
export async function openDockerAgentChannel(
  docker: Docker,
  container: Docker.Container,
  cmd: string[],
  user: string,
): Promise<AgentChannel> {
  let stream: Duplex;
  try {
    const exec = await container.exec({
      Cmd: cmd,
      User: user,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    });
    stream = await exec.start({ hijack: true, stdin: true });
  } catch (err) {
    throw dockerError('start the environment agent', err);
  }
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let stderrTail = '';
  docker.modem.demuxStream(stream, stdout, stderr);
  stderr.on('data', (b: Buffer) => {
    stderrTail = (stderrTail + b.toString('utf8')).slice(-2_000);
  });
  const channel = AgentChannel.over(stream, stdout, () => stream.destroy());
  const onEnd = (): void => {
    stdout.end();
    channel.close(
      new TroupeError(
        ErrorCode.UNAVAILABLE,
        `the environment agent exited${stderrTail ? `: ${stderrTail.trim()}` : ''}`,
      ),
    );
  };
  stream.once('end', onEnd);
  stream.once('close', onEnd);
  stream.on('error', onEnd);
  return channel;
}
