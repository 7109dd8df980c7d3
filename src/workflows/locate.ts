import type { Document, LineCounter } from 'yaml';

export interface Position {
  line: number;
  column: number;
}

/**
 * Maps JSON Pointers to the line and column of their node in the source text, or of the nearest
 * existing parent when the node itself is missing (a required property). One call answers a batch
 * of pointers in one pass, so locating many findings stays linear in the size of the text.
 */
export type Locator = (pointers: readonly string[]) => Map<string, Position>;

export const NO_LOCATION: Locator = () => new Map();

function segments(pointer: string): string[] {
  return pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((s) => s.replaceAll('~1', '/').replaceAll('~0', '~'));
}

function escapeSegment(segment: string): string {
  return segment.replaceAll('~', '~0').replaceAll('/', '~1');
}

/** The pointer and all of its parents, longest first. */
function withParents(pointer: string): string[] {
  const out = [pointer];
  for (let i = pointer.lastIndexOf('/'); i >= 0; i = pointer.lastIndexOf('/', i - 1)) {
    out.push(pointer.slice(0, i));
    if (i === 0) break;
  }
  return out;
}

function lineStarts(text: string): (offset: number) => Position {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return (offset) => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((starts[mid] as number) <= offset) low = mid;
      else high = mid - 1;
    }
    return { line: low + 1, column: offset - (starts[low] as number) + 1 };
  };
}

/**
 * A locator over JSON text (already known to parse): a single scan that records the offsets of the
 * wanted pointers and their parents, building pointer strings only along wanted paths.
 */
export function jsonLocator(text: string): Locator {
  return (pointers) => {
    const wanted = new Set<string>();
    for (const p of pointers) for (const q of withParents(p)) wanted.add(q);
    const offsets = scanJson(text, wanted);
    const position = lineStarts(text);
    const out = new Map<string, Position>();
    for (const p of pointers) {
      const found = withParents(p).find((q) => offsets.has(q));
      if (found !== undefined) out.set(p, position(offsets.get(found) as number));
    }
    return out;
  };
}

interface Frame {
  array: boolean;
  pointer: string | null;
  index: number;
}

function scanJson(text: string, wanted: ReadonlySet<string>): Map<string, number> {
  const offsets = new Map<string, number>();
  const n = text.length;
  let i = 0;
  const space = () => {
    while (i < n) {
      const c = text.charCodeAt(i);
      if (c === 32 || c === 10 || c === 13 || c === 9) i++;
      else break;
    }
  };
  const string = (): string => {
    const start = i;
    let escaped = false;
    for (i++; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c === 92) {
        escaped = true;
        i++;
      } else if (c === 34) {
        i++;
        break;
      }
    }
    const raw = text.slice(start, i);
    return escaped ? (JSON.parse(raw) as string) : raw.slice(1, -1);
  };
  const stack: Frame[] = [];
  /** The pointer of the member about to be read (objects read their key first). */
  const member = (frame: Frame): string | null => {
    if (frame.array) return frame.pointer === null ? null : `${frame.pointer}/${frame.index}`;
    space();
    const key = string();
    space();
    i++; // the colon
    return frame.pointer === null ? null : `${frame.pointer}/${escapeSegment(key)}`;
  };
  let pointer: string | null = '';
  for (;;) {
    space();
    if (pointer !== null) {
      if (wanted.has(pointer)) offsets.set(pointer, i);
      else pointer = null;
    }
    const c = text[i];
    let opened = false;
    if (c === '{' || c === '[') {
      i++;
      space();
      if (text[i] === (c === '{' ? '}' : ']')) i++;
      else {
        const frame: Frame = { array: c === '[', pointer, index: 0 };
        stack.push(frame);
        pointer = member(frame);
        opened = true;
      }
    } else if (c === '"') string();
    else while (i < n && !',]} \n\r\t'.includes(text[i] as string)) i++;
    if (opened) continue;
    // After a value: close finished containers, then move on to the next member.
    for (;;) {
      const frame = stack.at(-1);
      if (frame === undefined) return offsets;
      space();
      if (text[i] === ',') {
        i++;
        frame.index++;
        pointer = member(frame);
        break;
      }
      i++;
      stack.pop();
    }
  }
}

/** A locator over a composed YAML document; each pointer is followed from the root. */
export function yamlLocator(
  doc: Document.Parsed,
  lineCounter: LineCounter,
  YAML: typeof import('yaml'),
): Locator {
  const rangeOf = (pointer: string): number | undefined => {
    let node: unknown = doc.contents;
    let found = (node as { range?: [number] } | null)?.range?.[0];
    for (const segment of segments(pointer)) {
      let child: unknown;
      if (YAML.isMap(node)) {
        const pair = node.items.find((p) => YAML.isScalar(p.key) && String(p.key.value) === segment);
        child = pair?.value;
      } else if (YAML.isSeq(node) && /^\d+$/.test(segment)) {
        child = node.items[Number(segment)];
      }
      const start = (child as { range?: [number] } | null | undefined)?.range?.[0];
      if (start === undefined) break;
      node = child;
      found = start;
    }
    return found;
  };
  return (pointers) => {
    const out = new Map<string, Position>();
    for (const p of pointers) {
      const offset = rangeOf(p);
      if (offset === undefined) continue;
      const pos = lineCounter.linePos(offset);
      out.set(p, { line: pos.line, column: pos.col });
    }
    return out;
  };
}
