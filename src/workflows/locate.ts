import type { Document, LineCounter } from 'yaml';

export interface Position {
  line: number;
  column: number;
  /**
   * The scalar as written (`1.0`, `"1.0"`, `yes`), when the pointer names a scalar that exists: the
   * parsed value may differ (YAML and JSON read `1.0` as the number 1). At most MAX_SOURCE characters.
   */
  source?: string;
}

/** The longest scalar text a position repeats. */
export const MAX_SOURCE = 80;

const clip = (text: string) => (text.length > MAX_SOURCE ? `${text.slice(0, MAX_SOURCE - 1)}…` : text);

/**
 * Maps JSON Pointers to the line and column of their node in the source text: the key of an object
 * member (where a person looks for `prompt:`), an array element's start, or, when the node itself is
 * missing (a required property), the nearest existing parent. One call answers a batch of pointers in
 * one pass, so locating many findings stays linear in the size of the text.
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
    const found = scanJson(text, wanted);
    const position = lineStarts(text);
    const out = new Map<string, Position>();
    for (const p of pointers) {
      const at = withParents(p).find((q) => found.has(q));
      if (at === undefined) continue;
      const node = found.get(at) as Found;
      const source = at === p ? node.scalar : undefined;
      out.set(p, { ...position(node.offset), ...(source !== undefined ? { source: clip(source) } : {}) });
    }
    return out;
  };
}

interface Found {
  /** The member's key, or the element (or root) value. */
  offset: number;
  /** The text of a scalar value. */
  scalar?: string;
}

interface Frame {
  array: boolean;
  pointer: string | null;
  index: number;
}

function scanJson(text: string, wanted: ReadonlySet<string>): Map<string, Found> {
  const found = new Map<string, Found>();
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
  /** Where the member about to be read starts: its key in an object, its value in an array. */
  let memberStart = 0;
  /** The pointer of the member about to be read (objects read their key first). */
  const member = (frame: Frame): string | null => {
    if (frame.array) return frame.pointer === null ? null : `${frame.pointer}/${frame.index}`;
    space();
    memberStart = i;
    const key = string();
    space();
    i++; // the colon
    return frame.pointer === null ? null : `${frame.pointer}/${escapeSegment(key)}`;
  };
  let pointer: string | null = '';
  let inObject = false;
  for (;;) {
    space();
    const start = i;
    let node: Found | undefined;
    if (pointer !== null) {
      if (wanted.has(pointer)) {
        node = { offset: inObject ? memberStart : start };
        found.set(pointer, node);
      } else pointer = null;
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
        inObject = !frame.array;
        pointer = member(frame);
        opened = true;
      }
    } else {
      if (c === '"') string();
      else while (i < n && !',]} \n\r\t'.includes(text[i] as string)) i++;
      if (node !== undefined) node.scalar = text.slice(start, i);
    }
    if (opened) continue;
    // After a value: close finished containers, then move on to the next member.
    for (;;) {
      const frame = stack.at(-1);
      if (frame === undefined) return found;
      space();
      if (text[i] === ',') {
        i++;
        frame.index++;
        inObject = !frame.array;
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
  /** The text the document was composed from: scalars are quoted as written. */
  text?: string,
): Locator {
  const find = (pointer: string): { offset: number; scalar?: string } | undefined => {
    let node: unknown = doc.contents;
    let offset = (node as { range?: [number] } | null)?.range?.[0];
    let exact = true;
    for (const segment of segments(pointer)) {
      let child: unknown;
      let at: number | undefined;
      if (YAML.isMap(node)) {
        const pair = node.items.find((p) => YAML.isScalar(p.key) && String(p.key.value) === segment);
        child = pair?.value;
        at = (pair?.key as { range?: [number] } | undefined)?.range?.[0];
      } else if (YAML.isSeq(node) && /^\d+$/.test(segment)) {
        child = node.items[Number(segment)];
        at = (child as { range?: [number] } | null | undefined)?.range?.[0];
      }
      if (at === undefined) {
        exact = false;
        break;
      }
      node = child;
      offset = at;
    }
    if (offset === undefined) return undefined;
    const range = (node as { range?: [number, number] } | null)?.range;
    const scalar =
      exact && text !== undefined && YAML.isScalar(node) && range !== undefined
        ? text.slice(range[0], Math.min(range[1], range[0] + MAX_SOURCE + 1))
        : undefined;
    return { offset, ...(scalar !== undefined ? { scalar } : {}) };
  };
  return (pointers) => {
    const out = new Map<string, Position>();
    for (const p of pointers) {
      const found = find(p);
      if (found === undefined) continue;
      const pos = lineCounter.linePos(found.offset);
      out.set(p, {
        line: pos.line,
        column: pos.col,
        ...(found.scalar !== undefined ? { source: clip(found.scalar) } : {}),
      });
    }
    return out;
  };
}
