import { describe, expect, it } from 'vitest';
import { terminalSafe, terminalSafeValue } from './terminal-text.js';

const ESC = '\x1b';
const BEL = '\x07';
const ST = `${ESC}\\`;

describe('terminalSafe', () => {
  it('keeps plain text, newlines, tabs and non-ASCII letters as they are', () => {
    const text = 'all 12 tests pass\n\tok ✓ — naïve 日本語 עברית';
    expect(terminalSafe(text)).toBe(text);
  });

  it('removes whole CSI sequences: colours, clear screen, cursor moves, private modes', () => {
    expect(terminalSafe(`${ESC}[2J${ESC}[H${ESC}[1;31mFAIL${ESC}[0m done`)).toBe('FAIL done');
    expect(terminalSafe(`a${ESC}[?25lb${ESC}[?1049hc${ESC}[38;5;196md`)).toBe('abcd');
    expect(terminalSafe(`x\x9b31my`)).toBe('xy');
  });

  it('removes OSC sequences ended by BEL or ST: titles, OSC 52 clipboard, OSC 8 hyperlinks', () => {
    expect(terminalSafe(`${ESC}]0;owned${BEL}title gone`)).toBe('title gone');
    expect(terminalSafe(`${ESC}]52;c;cm0gLXJmIH4=${BEL}clipboard`)).toBe('clipboard');
    expect(terminalSafe(`${ESC}]8;;https://evil.example/${ST}click${ESC}]8;;${ST}`)).toBe('click');
    expect(terminalSafe(`\x9d0;t\x9cx`)).toBe('x');
    // DCS, APC, PM, SOS are string sequences too.
    expect(terminalSafe(`${ESC}Pq#0;2;0;0;0${ST}a${ESC}_apc${BEL}b${ESC}^pm${ST}c${ESC}Xsos${ST}d`)).toBe(
      'abcd',
    );
  });

  it('removes other escapes with their bytes, and a lone ESC', () => {
    expect(terminalSafe(`${ESC}(B${ESC}c${ESC}7a${ESC}8${ESC}=b${ESC}`)).toBe('ab');
    expect(terminalSafe(`a${ESC}\nb`)).toBe('a\nb');
  });

  it('drops an unterminated string sequence only up to its introducer: the rest stays readable', () => {
    expect(terminalSafe(`before ${ESC}]0;no end\nafter`)).toBe('before 0;no end\nafter');
    // Another escape ends a string sequence, as in a terminal.
    expect(terminalSafe(`${ESC}]0;t${ESC}[31mred`)).toBe('red');
  });

  it('removes C0 and C1 controls but newline and tab, and makes CR-LF and lone CR newlines', () => {
    expect(terminalSafe('a\x00b\x08c\x0bd\x0ce\x7ff\x85g\x9fh')).toBe('abcdefgh');
    expect(terminalSafe('one\r\ntwo\rthree\r')).toBe('one\ntwo\nthree\n');
  });

  it('removes bidirectional overrides, isolates and marks', () => {
    const bidi = '\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c';
    expect(terminalSafe(`access${bidi}Level = "user"`)).toBe('accessLevel = "user"');
    expect(terminalSafe('gnp.\u202eexe')).toBe('gnp.exe');
  });

  it('makes every string and key of a JSON value safe, and leaves other values alone', () => {
    expect(
      terminalSafeValue({ [`k${ESC}[1m`]: [`v${ESC}]0;t${BEL}`, 3, null, true], n: { s: 'a\u202eb' } }),
    ).toEqual({ k: ['v', 3, null, true], n: { s: 'ab' } });
  });

  // Quadratic time on these sizes runs past the test's timeout, which is the bound (no wall clock).
  it('is linear on hostile input', () => {
    const n = 1 << 20;
    expect(terminalSafe(`${ESC}]`.repeat(n / 2))).toBe('');
    expect(terminalSafe(`${ESC}[`.repeat(n / 2))).toBe('');
    // Unterminated string sequences: the search for a terminator is not repeated for each.
    expect(terminalSafe('\x9dx'.repeat(n / 2))).toBe('x'.repeat(n / 2));
    expect(terminalSafe('\r'.repeat(n))).toBe('\n'.repeat(n));
  });
});
