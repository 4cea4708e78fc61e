import { TroupeError } from '@troupe/proto';
import {
  isDaemonOutage,
  isDaemonUnreachable,
  neverReachedDaemon,
} from '../../src/internal/docker-daemon';
import { dockerError } from '../../src/internal/docker-errors';

/** A socket error as Node raises it. */
function socketError(code: string, message = `connect ${code} /var/run/docker.sock`): Error {
  return Object.assign(new Error(message), { code, syscall: 'connect' });
}

describe('isDaemonUnreachable', () => {
  test.each(['ENOENT', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE'])('a socket %s is', (code) => {
    expect(isDaemonUnreachable(socketError(code))).toBe(true);
  });

  test('a socket hung up mid-request is', () => {
    expect(isDaemonUnreachable(new Error('socket hang up'))).toBe(true);
  });

  test('so is the Troupe error a Docker call made of one (through its cause)', () => {
    const err = dockerError('create sandbox for sandbox/x', socketError('ENOENT'));
    expect(err.code).toBe('UNAVAILABLE');
    expect(isDaemonUnreachable(err)).toBe(true);
  });

  test('an answer from the daemon is not, whatever it says', () => {
    for (const statusCode of [404, 409, 500, 503]) {
      const answer = Object.assign(new Error('(HTTP code 500) server error'), { statusCode });
      expect(isDaemonUnreachable(answer)).toBe(false);
      expect(isDaemonUnreachable(dockerError('create', answer))).toBe(false);
    }
  });

  test('other errors are not', () => {
    expect(isDaemonUnreachable(new TroupeError('INVALID_ARGUMENT', 'spec.image: required'))).toBe(
      false,
    );
    expect(isDaemonUnreachable(socketError('EACCES'))).toBe(false);
    expect(isDaemonUnreachable('ENOENT')).toBe(false);
    expect(isDaemonUnreachable(undefined)).toBe(false);
  });
});

describe('neverReachedDaemon', () => {
  test.each(['ENOENT', 'ECONNREFUSED'])(
    'a connect %s never reached it (through causes)',
    (code) => {
      expect(neverReachedDaemon(socketError(code))).toBe(true);
      expect(neverReachedDaemon(dockerError('docker exec', socketError(code)))).toBe(true);
    },
  );

  test('a connection cut mid-request may have done its work', () => {
    expect(neverReachedDaemon(socketError('ECONNRESET', 'read ECONNRESET'))).toBe(false);
    expect(neverReachedDaemon(new Error('socket hang up'))).toBe(false);
  });

  test('an answer from the daemon or another error is not', () => {
    expect(neverReachedDaemon(Object.assign(new Error('conflict'), { statusCode: 409 }))).toBe(
      false,
    );
    expect(neverReachedDaemon(socketError('EACCES'))).toBe(false);
  });
});

describe('isDaemonOutage', () => {
  test('an unreachable daemon is one', () => {
    expect(isDaemonOutage(dockerError('destroy', socketError('ENOENT')))).toBe(true);
  });

  test('so is a server error, which a daemon shutting down answers', () => {
    const closing = Object.assign(
      new Error('(HTTP code 500) server error - get troupe-sbx-1-ws: database not open'),
      { statusCode: 500 },
    );
    expect(isDaemonOutage(closing)).toBe(true);
    expect(isDaemonOutage(dockerError('destroy', closing))).toBe(true);
  });

  test('an answer about the request is not', () => {
    for (const statusCode of [400, 404, 409]) {
      expect(isDaemonOutage(Object.assign(new Error('no'), { statusCode }))).toBe(false);
    }
    expect(isDaemonOutage(new Error('spec.image: required'))).toBe(false);
  });
});
