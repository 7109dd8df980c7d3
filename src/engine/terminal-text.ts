/**
 * Text a program wrote (a check's output, an API's answer to a command step) made safe to show: to an
 * agent, in telemetry, on the dashboard. Such text may carry terminal control sequences (clear the
 * screen, recolour, retitle the window, write the clipboard with OSC 52, hide a link behind OSC 8) and
 * bidirectional overrides that make text read differently from what it is (Trojan Source). A model may
 * act on them and a person reading a log in a terminal gets them executed, so they are removed here,
 * in one place, before anything shows the text.
 *
 * What is removed:
 * - whole escape sequences, not only their ESC: CSI (`ESC [` … final byte, and the 8-bit CSI U+009B),
 *   string sequences (OSC `ESC ]`, DCS `ESC P`, SOS `ESC X`, PM `ESC ^`, APC `ESC _`, and their 8-bit
 *   forms) up to their terminator (BEL, ST `ESC \` or U+009C), and the other escapes (`ESC` with
 *   intermediate bytes and a final byte: `ESC ( B`, `ESC c`, `ESC 7`);
 * - every other C0 control but newline and tab (NUL, backspace, form feed, DEL, …) and every C1 control
 *   (U+0080–U+009F);
 * - the bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) and, by choice,
 *   the bidirectional marks U+200E, U+200F and U+061C too: they are invisible and move neutral characters
 *   (punctuation, digits) to the other side of a run, which is enough to make `a < b` read `b > a`;
 *   nothing a build tool or an API says needs them, and the letters around them are kept.
 *
 * CR-LF becomes LF and a lone CR becomes LF (a CR would let a line overwrite the one before it).
 * A string sequence without a terminator loses its introducer only: what follows is then plain text,
 * and a program cannot make the rest of its output disappear by opening one. One pass, linear time.
 */

const LF = 0x0a;
const CR = 0x0d;
const ESC = 0x1b;
const BEL = 0x07;
const BACKSLASH = 0x5c;
/** The 8-bit forms: CSI, ST, and the introducers of string sequences (DCS, SOS, OSC, PM, APC). */
const C1_CSI = 0x9b;
const C1_ST = 0x9c;
const C1_STRINGS = new Set([0x90, 0x98, 0x9d, 0x9e, 0x9f]);
/** The final characters after ESC that open a CSI or a string sequence. */
const ESC_CSI = 0x5b; // [
const ESC_STRINGS = new Set([0x5d, 0x50, 0x58, 0x5e, 0x5f]); // ] P X ^ _

/** Whether a character is removed or rewritten (everything else is kept as it is). */
function special(c: number): boolean {
  if (c < 0x20) return c !== LF && c !== 0x09;
  if (c < 0x7f) return false;
  if (c <= 0x9f) return true;
  return (
    c === 0x061c ||
    c === 0x200e ||
    c === 0x200f ||
    (c >= 0x202a && c <= 0x202e) ||
    (c >= 0x2066 && c <= 0x2069)
  );
}

const UTF16LE = new TextDecoder('utf-16le');

/** The text with terminal control sequences, control characters and bidirectional controls removed. */
export function terminalSafe(text: string): string {
  const n = text.length;
  // Most text has nothing to remove: it is returned as it is, not copied.
  let first = 0;
  while (first < n && !special(text.charCodeAt(first))) first++;
  if (first === n) return text;
  // No string terminator (BEL, ESC, ST) at or after this index: found once, so no second scan to the end.
  let noTerminatorFrom = n + 1;

  /** After a CSI's introducer at `j`: parameters, intermediates and a final byte. */
  const csiEnd = (j: number): number => {
    let k = j;
    while (k < n && text.charCodeAt(k) >= 0x30 && text.charCodeAt(k) <= 0x3f) k++;
    while (k < n && text.charCodeAt(k) >= 0x20 && text.charCodeAt(k) <= 0x2f) k++;
    const c = text.charCodeAt(k);
    // Without its final byte the sequence is cut short: what it consumed goes, the rest is text.
    return c >= 0x40 && c <= 0x7e ? k + 1 : k;
  };

  /** After a string sequence's introducer at `j`: up to and including its terminator. */
  const stringEnd = (j: number): number => {
    if (j >= noTerminatorFrom) return j;
    for (let k = j; k < n; k++) {
      const c = text.charCodeAt(k);
      if (c === BEL || c === C1_ST) return k + 1;
      // ST is `ESC \`; any other ESC starts a new sequence (as in a terminal) and ends this one.
      if (c === ESC) return text.charCodeAt(k + 1) === BACKSLASH ? k + 2 : k;
    }
    noTerminatorFrom = j;
    return j;
  };

  /** The index after the escape sequence that starts at `i` (an ESC or an 8-bit introducer). */
  const sequenceEnd = (i: number): number => {
    const c = text.charCodeAt(i);
    if (c === C1_CSI) return csiEnd(i + 1);
    if (C1_STRINGS.has(c)) return stringEnd(i + 1);
    if (c !== ESC) return i + 1;
    const next = text.charCodeAt(i + 1);
    if (next === ESC_CSI) return csiEnd(i + 2);
    if (ESC_STRINGS.has(next)) return stringEnd(i + 2);
    if (next >= 0x20 && next <= 0x2f) {
      let k = i + 1;
      while (k < n && text.charCodeAt(k) >= 0x20 && text.charCodeAt(k) <= 0x2f) k++;
      const final = text.charCodeAt(k);
      return final >= 0x30 && final <= 0x7e ? k + 1 : k;
    }
    if (next >= 0x30 && next <= 0x7e) return i + 2;
    // ESC before a control, a non-ASCII character or the end: only the ESC goes.
    return i + 1;
  };

  // Written into one buffer (UTF-16LE, byte by byte, whatever the platform's byte order) and decoded
  // once: joining many small pieces is several times slower.
  const out = new Uint8Array(2 * n);
  let length = 0;
  const put = (unit: number) => {
    out[length++] = unit & 0xff;
    out[length++] = unit >> 8;
  };
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (!special(c)) {
      put(c);
      i++;
    } else if (c === CR) {
      put(LF);
      i += text.charCodeAt(i + 1) === LF ? 2 : 1;
    } else if (c === ESC || c === C1_CSI || C1_STRINGS.has(c)) {
      i = sequenceEnd(i);
    } else {
      i++;
    }
  }
  // A lone surrogate (half of a character cut off) becomes U+FFFD, which is harmless.
  return UTF16LE.decode(out.subarray(0, length));
}

/** A JSON value (an API's answer) with every string and key made terminal-safe; other values as they are. */
export function terminalSafeValue(value: unknown): unknown {
  if (typeof value === 'string') return terminalSafe(value);
  if (Array.isArray(value)) return value.map(terminalSafeValue);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [terminalSafe(k), terminalSafeValue(v)]));
  }
  return value;
}
