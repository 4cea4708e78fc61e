import { errorCode } from '@troupe/proto';
import { agentActionOf, keysymOf, parseAction } from '@troupe/node-agent';

const screen = { width: 1280, height: 800 };

function refusal(value: unknown): string {
  try {
    parseAction(value, screen);
  } catch (err) {
    expect(errorCode(err)).toBe('INVALID_ARGUMENT');
    return String(err);
  }
  throw new Error('accepted');
}

describe('computer_13 actions', () => {
  test('valid actions parse and map to the agent form with keysyms', () => {
    expect(agentActionOf(parseAction({ action_type: 'CLICK', x: 1, y: 2 }, screen))).toEqual({
      type: 'CLICK',
      x: 1,
      y: 2,
    });
    expect(
      agentActionOf(parseAction({ action_type: 'HOTKEY', keys: ['ctrl', 'S'] }, screen)),
    ).toEqual({ type: 'HOTKEY', keysyms: ['Control_L', 'S'] });
    expect(agentActionOf(parseAction({ action_type: 'PRESS', key: 'enter' }, screen))).toEqual({
      type: 'PRESS',
      keysym: 'Return',
    });
    expect(agentActionOf(parseAction({ action_type: 'DONE' }, screen))).toBeUndefined();
    expect(keysymOf(',')).toBe('comma');
    expect(keysymOf('F5')).toBe('F5');
    expect(keysymOf('nope')).toBeUndefined();
  });

  test('coordinates off the screen name the field and the bound', () => {
    expect(refusal({ action_type: 'MOVE_TO', x: 1280, y: 0 })).toContain(
      '`action.x`: must be < the screen width 1280',
    );
    expect(refusal({ action_type: 'DRAG_TO', x: 0, y: 900 })).toContain('`action.y`');
    expect(refusal({ action_type: 'CLICK', x: -1, y: 0 })).toContain('action.x');
    expect(refusal({ action_type: 'CLICK', x: 3 })).toContain('x and y go together');
  });

  test('unknown keys, types and fields are refused by name', () => {
    expect(refusal({ action_type: 'PRESS', key: 'hyperdrive' })).toContain('action.key');
    expect(refusal({ action_type: 'HOTKEY', keys: ['ctrl', 'bogus'] })).toContain('action.keys[1]');
    expect(refusal({ action_type: 'JUMP' })).toContain('action.action_type');
    expect(refusal({ action_type: 'TYPING', text: 'a', speed: 3 })).toContain('speed');
    expect(refusal({ action_type: 'SCROLL' })).toContain('dx or dy must be non-zero');
  });
});
