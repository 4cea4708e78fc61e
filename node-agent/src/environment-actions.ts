import { invalidArgument, parseWith } from '@troupe/proto';
import { z } from 'zod';

/**
 * OSWorld's `computer_13` action types. `DONE` and `FAIL` end an episode (FAIL: the agent says
 * the task cannot be done); `WAIT` pauses; the rest drive the mouse and keyboard.
 */
export const ActionType = {
  MOVE_TO: 'MOVE_TO',
  CLICK: 'CLICK',
  MOUSE_DOWN: 'MOUSE_DOWN',
  MOUSE_UP: 'MOUSE_UP',
  RIGHT_CLICK: 'RIGHT_CLICK',
  DOUBLE_CLICK: 'DOUBLE_CLICK',
  DRAG_TO: 'DRAG_TO',
  SCROLL: 'SCROLL',
  TYPING: 'TYPING',
  PRESS: 'PRESS',
  KEY_DOWN: 'KEY_DOWN',
  KEY_UP: 'KEY_UP',
  HOTKEY: 'HOTKEY',
  WAIT: 'WAIT',
  DONE: 'DONE',
  FAIL: 'FAIL',
} as const;
/** One of the {@link ActionType} values. */
export type ActionType = (typeof ActionType)[keyof typeof ActionType];

// pyautogui key names (what computer_13 actions carry) → X keysym names. Letters, digits and
// the keysym names themselves are accepted as they are.
const NAMED_KEYS: Readonly<Record<string, string>> = {
  enter: 'Return',
  return: 'Return',
  '\n': 'Return',
  tab: 'Tab',
  '\t': 'Tab',
  space: 'space',
  ' ': 'space',
  backspace: 'BackSpace',
  delete: 'Delete',
  del: 'Delete',
  esc: 'Escape',
  escape: 'Escape',
  insert: 'Insert',
  home: 'Home',
  end: 'End',
  pageup: 'Prior',
  pgup: 'Prior',
  pagedown: 'Next',
  pgdn: 'Next',
  up: 'Up',
  down: 'Down',
  left: 'Left',
  right: 'Right',
  shift: 'Shift_L',
  shiftleft: 'Shift_L',
  shiftright: 'Shift_R',
  ctrl: 'Control_L',
  ctrlleft: 'Control_L',
  ctrlright: 'Control_R',
  control: 'Control_L',
  alt: 'Alt_L',
  altleft: 'Alt_L',
  altright: 'Alt_R',
  win: 'Super_L',
  winleft: 'Super_L',
  winright: 'Super_R',
  super: 'Super_L',
  command: 'Super_L',
  capslock: 'Caps_Lock',
  numlock: 'Num_Lock',
  scrolllock: 'Scroll_Lock',
  printscreen: 'Print',
  prtsc: 'Print',
  pause: 'Pause',
  menu: 'Menu',
  apps: 'Menu',
  ...Object.fromEntries(Array.from({ length: 24 }, (_, i) => [`f${i + 1}`, `F${i + 1}`])),
  '!': 'exclam',
  '"': 'quotedbl',
  '#': 'numbersign',
  $: 'dollar',
  '%': 'percent',
  '&': 'ampersand',
  "'": 'apostrophe',
  '(': 'parenleft',
  ')': 'parenright',
  '*': 'asterisk',
  '+': 'plus',
  ',': 'comma',
  '-': 'minus',
  '.': 'period',
  '/': 'slash',
  ':': 'colon',
  ';': 'semicolon',
  '<': 'less',
  '=': 'equal',
  '>': 'greater',
  '?': 'question',
  '@': 'at',
  '[': 'bracketleft',
  '\\': 'backslash',
  ']': 'bracketright',
  '^': 'asciicircum',
  _: 'underscore',
  '`': 'grave',
  '{': 'braceleft',
  '|': 'bar',
  '}': 'braceright',
  '~': 'asciitilde',
};
const KEYSYM_NAMES: ReadonlySet<string> = new Set(Object.values(NAMED_KEYS));

/** The X keysym of a pyautogui key name (or keysym name), or `undefined` when it is unknown. */
export function keysymOf(key: string): string | undefined {
  if (/^[A-Za-z0-9]$/.test(key)) return key;
  const named = NAMED_KEYS[key] ?? NAMED_KEYS[key.toLowerCase()];
  if (named !== undefined) return named;
  return KEYSYM_NAMES.has(key) ? key : undefined;
}

const KeySchema = z
  .string()
  .min(1)
  .refine((k) => keysymOf(k) !== undefined, {
    error: (issue) =>
      `unknown key name ${JSON.stringify(issue.input)} (use pyautogui names such as 'enter', ` +
      `'ctrl', 'f5', 'a', ',')`,
  });
const coordinate = z.int().min(0);
const Button = z.enum(['left', 'middle', 'right']);

/** A `computer_13` action, as callers send it. */
export const ActionSchema = z.discriminatedUnion('action_type', [
  z.object({ action_type: z.literal('MOVE_TO'), x: coordinate, y: coordinate }).strict(),
  z
    .object({
      action_type: z.literal('CLICK'),
      x: coordinate.optional(),
      y: coordinate.optional(),
      /** @default 'left' */
      button: Button.optional(),
      /** @default 1 */
      num_clicks: z.int().min(1).max(3).optional(),
    })
    .strict(),
  z
    .object({
      action_type: z.literal('MOUSE_DOWN'),
      x: coordinate.optional(),
      y: coordinate.optional(),
      button: Button.optional(),
    })
    .strict(),
  z
    .object({
      action_type: z.literal('MOUSE_UP'),
      x: coordinate.optional(),
      y: coordinate.optional(),
      button: Button.optional(),
    })
    .strict(),
  z
    .object({
      action_type: z.literal('RIGHT_CLICK'),
      x: coordinate.optional(),
      y: coordinate.optional(),
    })
    .strict(),
  z
    .object({
      action_type: z.literal('DOUBLE_CLICK'),
      x: coordinate.optional(),
      y: coordinate.optional(),
    })
    .strict(),
  z.object({ action_type: z.literal('DRAG_TO'), x: coordinate, y: coordinate }).strict(),
  z
    .object({
      action_type: z.literal('SCROLL'),
      /** Wheel clicks right (negative: left). */
      dx: z.int().min(-50).max(50).default(0),
      /** Wheel clicks down (negative: up). */
      dy: z.int().min(-50).max(50).default(0),
    })
    .strict()
    .refine((a) => a.dx !== 0 || a.dy !== 0, { error: 'dx or dy must be non-zero', path: ['dy'] }),
  z.object({ action_type: z.literal('TYPING'), text: z.string().min(1).max(10_000) }).strict(),
  z.object({ action_type: z.literal('PRESS'), key: KeySchema }).strict(),
  z.object({ action_type: z.literal('KEY_DOWN'), key: KeySchema }).strict(),
  z.object({ action_type: z.literal('KEY_UP'), key: KeySchema }).strict(),
  z.object({ action_type: z.literal('HOTKEY'), keys: z.array(KeySchema).min(1).max(6) }).strict(),
  z
    .object({
      action_type: z.literal('WAIT'),
      /** @default 1 */
      seconds: z.number().min(0).max(30).optional(),
    })
    .strict(),
  z.object({ action_type: z.literal('DONE') }).strict(),
  z.object({ action_type: z.literal('FAIL') }).strict(),
]);
/** A `computer_13` action (see {@link ActionSchema}). */
export type Action = z.input<typeof ActionSchema>;
/** A validated action. */
export type ParsedAction = z.output<typeof ActionSchema>;

/** The screen size actions are checked against. */
export interface ScreenSize {
  width: number;
  height: number;
}

/**
 * Validates an action against the schema and the screen: coordinates must lie on it.
 * @throws TroupeError `INVALID_ARGUMENT` naming the field (`action.x`, `action.keys[1]`, …)
 */
export function parseAction(value: unknown, screen: ScreenSize, prefix = 'action'): ParsedAction {
  const action = parseWith(ActionSchema, value, { prefix });
  if ('x' in action && action.x !== undefined && action.x >= screen.width) {
    throw invalidArgument(`${prefix}.x`, `must be < the screen width ${screen.width}`, action.x);
  }
  if ('y' in action && action.y !== undefined && action.y >= screen.height) {
    throw invalidArgument(`${prefix}.y`, `must be < the screen height ${screen.height}`, action.y);
  }
  if (('x' in action && action.x !== undefined) !== ('y' in action && action.y !== undefined)) {
    throw invalidArgument(
      `${prefix}.${'x' in action && action.x !== undefined ? 'y' : 'x'}`,
      'x and y go together',
    );
  }
  return action;
}

/** Whether an action ends the episode (`DONE` or `FAIL`). */
export function isTerminalAction(action: ParsedAction): boolean {
  return action.action_type === 'DONE' || action.action_type === 'FAIL';
}

/**
 * The in-environment agent's form of an action: keysyms instead of key names, defaults applied.
 * `DONE` and `FAIL` have none (they change nothing in the machine).
 */
export function agentActionOf(action: ParsedAction): Record<string, unknown> | undefined {
  const keysym = (k: string): string => keysymOf(k) ?? k;
  switch (action.action_type) {
    case 'DONE':
    case 'FAIL':
      return undefined;
    case 'PRESS':
    case 'KEY_DOWN':
    case 'KEY_UP':
      return { type: action.action_type, keysym: keysym(action.key) };
    case 'HOTKEY':
      return { type: action.action_type, keysyms: action.keys.map(keysym) };
    case 'WAIT':
      return { type: 'WAIT', seconds: action.seconds ?? 1 };
    default: {
      const { action_type: type, ...rest } = action;
      return { type, ...rest };
    }
  }
}
