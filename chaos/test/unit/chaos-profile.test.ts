import { chaosProfile } from '../../src/chaos-profile';
import { FaultKind } from '../../src/fault-schedule';

describe('chaosProfile', () => {
  test('the long profile runs every fault kind of the model, the Docker daemon restart too', () => {
    const long = chaosProfile('long', true);
    expect(long.schedules).toBe(50);
    expect([...long.kinds].sort()).toEqual(Object.values(FaultKind).sort());
  });

  test('without dockerRestart the long profile leaves the daemon restart out, and only it', () => {
    const kinds = chaosProfile('long', false).kinds;
    expect(kinds).not.toContain(FaultKind.DOCKER_RESTART);
    expect(kinds).toHaveLength(Object.values(FaultKind).length - 1);
  });

  test('the short (CI) profile never restarts the daemon: it stops every container here', () => {
    expect(chaosProfile('short', true).kinds).not.toContain(FaultKind.DOCKER_RESTART);
  });

  test('an unknown profile is refused, naming the flag', () => {
    expect(() => chaosProfile('medium', true)).toThrow(
      '--profile: must be short or long, got medium',
    );
  });
});
