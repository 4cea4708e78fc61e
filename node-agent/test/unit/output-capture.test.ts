import { OutputCapture } from '../../src/internal/output-capture';

describe('OutputCapture', () => {
  test('keeps everything under the cap', () => {
    const c = new OutputCapture(100);
    c.write(Buffer.from('hello '));
    c.write(Buffer.from('world'));
    expect(c.text()).toBe('hello world');
    expect(c.droppedBytes).toBe(0);
    expect(c.totalBytes).toBe(11);
  });

  test('keeps the head and the tail and counts the middle, across many small writes', () => {
    const c = new OutputCapture(10);
    const input = 'ABCDE' + 'x'.repeat(1000) + 'VWXYZ';
    for (const ch of input) c.write(Buffer.from(ch));
    expect(c.text()).toBe('ABCDEVWXYZ');
    expect(c.droppedBytes).toBe(1000);
    expect(c.totalBytes).toBe(1010);
  });

  test('handles one write larger than the whole cap', () => {
    const c = new OutputCapture(6);
    c.write(Buffer.from('0123456789'));
    expect(c.text()).toBe('012789');
    expect(c.droppedBytes).toBe(4);
    c.write(Buffer.from('ab'));
    expect(c.text()).toBe('0129ab');
    expect(c.droppedBytes).toBe(6);
  });

  test('an odd cap gives the extra byte to the head; a zero cap keeps nothing', () => {
    const c = new OutputCapture(5);
    c.write(Buffer.from('abcdefgh'));
    expect(c.text()).toBe('abcgh');
    const none = new OutputCapture(0);
    none.write(Buffer.from('abc'));
    expect(none.text()).toBe('');
    expect(none.droppedBytes).toBe(3);
  });

  test("does not keep references to the caller's buffer", () => {
    const c = new OutputCapture(4);
    const buf = Buffer.from('abcdefgh');
    c.write(buf);
    buf.fill(0x2d);
    expect(c.text()).toBe('abgh');
    expect(c.tailText(2)).toBe('gh');
  });
});
