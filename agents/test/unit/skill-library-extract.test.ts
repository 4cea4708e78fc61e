import { extractFunctions, normalisePython } from '../../src/skill-library/extract-functions';

// Function extraction for the SAGE skill library (issue 19): a real Python parser finds the
// top-level functions of executed code, their docstrings and the bare names they call.

describe('extractFunctions', () => {
  it('finds top-level defs in order, with docstring and bare calls', () => {
    const code = [
      'import json',
      'x = 1',
      'def pay(person, amount):',
      '    """Request `amount` from `person`.',
      '',
      '        Returns the payment id.',
      '    """',
      '    token = login(apis.payments)',
      '    r = apis.payments.request(token, person, amount)',
      '    log(r); log(r)',
      '    return r["id"]',
      '',
      'print(pay("a", 2))',
      'def login(app):',
      "    'One line.'",
      '    return app.login()["access_token"]',
      '',
    ].join('\n');
    const fns = extractFunctions(code);
    expect(fns.map((f) => f.name)).toEqual(['pay', 'login']);
    const [pay, login] = fns;
    expect(pay?.source).toBe(
      [
        'def pay(person, amount):',
        '    """Request `amount` from `person`.',
        '',
        '        Returns the payment id.',
        '    """',
        '    token = login(apis.payments)',
        '    r = apis.payments.request(token, person, amount)',
        '    log(r); log(r)',
        '    return r["id"]',
        '',
      ].join('\n'),
    );
    expect(pay?.docstring).toBe('Request `amount` from `person`.\n\nReturns the payment id.');
    // `apis.payments.request` is an attribute call, not a bare name; `log` once.
    expect(pay?.calls).toEqual(['login', 'log']);
    expect(login?.docstring).toBe('One line.');
    expect(login?.calls).toEqual([]);
  });

  it('keeps decorators and async defs', () => {
    const code = [
      '@functools.lru_cache(maxsize=None)',
      '@retry(3)',
      'async def fetch(x):',
      '    return await get(x)',
      '',
      'async def plain():',
      '    pass',
    ].join('\n');
    const fns = extractFunctions(code);
    expect(fns.map((f) => f.name)).toEqual(['fetch', 'plain']);
    expect(fns[0]?.source).toBe(
      '@functools.lru_cache(maxsize=None)\n@retry(3)\nasync def fetch(x):\n    return await get(x)\n',
    );
    // `retry` is called as a decorator; `functools.lru_cache` is an attribute.
    expect(fns[0]?.calls).toEqual(['retry', 'get']);
    expect(fns[0]?.docstring).toBeUndefined();
    expect(fns[1]?.source).toBe('async def plain():\n    pass\n');
  });

  it('keeps nested functions inside their def and ignores defs in other blocks', () => {
    const code = [
      'def outer(xs):',
      '    def inner(x):',
      '        return helper(x) * 2',
      '    return [inner(x) for x in xs]',
      'class K:',
      '    def method(self):',
      '        return 1',
      'if True:',
      '    def in_if():',
      '        return 2',
      'try:',
      '    def in_try():',
      '        return 3',
      'except Exception:',
      '    pass',
    ].join('\n');
    const fns = extractFunctions(code);
    expect(fns.map((f) => f.name)).toEqual(['outer']);
    expect(fns[0]?.source).toContain('    def inner(x):\n        return helper(x) * 2\n');
    expect(fns[0]?.calls).toEqual(['helper', 'inner']);
  });

  it('dedents code that is indented as a whole', () => {
    const fns = extractFunctions('    def f():\n        return 1\n\n    f()\n');
    expect(fns).toEqual([{ name: 'f', source: 'def f():\n    return 1\n', calls: [] }]);
  });

  it('yields nothing for code that does not parse', () => {
    expect(extractFunctions('def ok():\n    return 1\n\ndef broken(:\n    pass\n')).toEqual([]);
    expect(extractFunctions('def f(\n')).toEqual([]);
    expect(extractFunctions('x = = 1\ndef f():\n    pass\n')).toEqual([]);
    // An unindent to no outer level: Python raises IndentationError.
    expect(extractFunctions('def f():\n    return 1\n  x = 2\n')).toEqual([]);
  });

  it('accepts statements joined by semicolons and continued lines around defs', () => {
    const code = 'a = 1; b = (2,\n  3)\ndef f(): return a; pass\nimport os; import re\n';
    expect(extractFunctions(code).map((f) => f.source)).toEqual(['def f(): return a; pass\n']);
  });

  it('yields nothing for code without functions', () => {
    expect(extractFunctions('')).toEqual([]);
    expect(extractFunctions('print(1)\nfor i in range(3):\n    print(i)\n')).toEqual([]);
  });

  it('decodes escapes in docstrings and keeps raw ones raw', () => {
    const fns = extractFunctions(
      'def a():\n    "Tab\\there."\n\ndef b():\n    r"""Keep \\n raw."""\n',
    );
    expect(fns[0]?.docstring).toBe('Tab\there.');
    expect(fns[1]?.docstring).toBe('Keep \\n raw.');
  });

  it('does not take a string that is not the first statement as the docstring', () => {
    const fns = extractFunctions('def f():\n    x = 1\n    "not a doc"\n    return x\n');
    expect(fns[0]?.docstring).toBeUndefined();
  });

  it('normalises comments, blank lines and trailing blanks away', () => {
    const a = 'def f(x):\n    # add one\n    return x + 1  # why\n';
    const b = 'def f(x):\n\n    return x + 1   \n';
    expect(normalisePython(a)).toBe(normalisePython(b));
    expect(normalisePython(a)).not.toBe(normalisePython('def f(x):\n    return x + 2\n'));
  });
});
