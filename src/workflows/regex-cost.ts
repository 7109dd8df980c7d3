/**
 * An upper estimate of what compiling an RE2 pattern costs: the size of the program after counted
 * repetitions are expanded (`a{1000}` is a thousand instructions, `(?:ab){1000}` two thousand). The
 * linear-time engine is safe to run but not free to compile: a 2,000-character pattern full of
 * counted repetitions takes a second, so a workflow's patterns share a budget of this estimate.
 */
export function regexCost(pattern: string): number {
  /** Per open group: the size so far and the size of its last atom (what a quantifier repeats). */
  const groups: { total: number; last: number }[] = [{ total: 0, last: 0 }];
  const top = () => groups[groups.length - 1] as { total: number; last: number };
  const atom = (size: number) => {
    const g = top();
    g.total += size;
    g.last = size;
  };
  const n = pattern.length;
  let i = 0;
  while (i < n) {
    const c = pattern[i];
    if (c === '\\') {
      const next = pattern[i + 1];
      if (next === 'Q') {
        const end = pattern.indexOf('\\E', i + 2);
        const stop = end === -1 ? n : end;
        atom(Math.max(1, stop - i - 2));
        top().last = 1; // a quantifier after \Q…\E repeats its last character
        i = end === -1 ? n : end + 2;
      } else if ((next === 'p' || next === 'P' || next === 'x') && pattern[i + 2] === '{') {
        const close = pattern.indexOf('}', i);
        i = close === -1 ? n : close + 1;
        atom(1);
      } else {
        i += next === 'p' || next === 'P' ? 3 : 2;
        atom(1);
      }
    } else if (c === '[') {
      i++;
      if (pattern[i] === '^') i++;
      if (pattern[i] === ']') i++;
      while (i < n && pattern[i] !== ']') {
        if (pattern[i] === '\\') i += 2;
        else if (pattern.startsWith('[:', i)) {
          const close = pattern.indexOf(':]', i);
          i = close === -1 ? n : close + 2;
        } else i++;
      }
      i++;
      atom(1);
    } else if (c === '(') {
      groups.push({ total: 0, last: 0 });
      i++;
      if (pattern[i] === '?') {
        // (?:…), (?i), (?i:…), (?P<name>…), (?<name>…): skip the header.
        i++;
        if (pattern[i] === 'P') i++;
        if (pattern[i] === '<') {
          const close = pattern.indexOf('>', i);
          i = close === -1 ? n : close + 1;
        } else {
          while (i < n && /[a-zA-Z-]/.test(pattern[i] as string)) i++;
          if (pattern[i] === ':') i++;
        }
      }
    } else if (c === ')') {
      const group = groups.length > 1 ? (groups.pop() as { total: number }) : { total: 0 };
      atom(group.total);
      i++;
    } else if (c === '{') {
      const counted = /^\{(\d{1,7})(,(\d{0,7}))?\}/.exec(pattern.slice(i, i + 17));
      if (counted) {
        const low = Number(counted[1]);
        const times = Math.max(1, counted[2] === undefined ? low : counted[3] ? Number(counted[3]) : low + 1);
        const g = top();
        g.total = Math.min(Number.MAX_SAFE_INTEGER, g.total + g.last * (times - 1));
        g.last = Math.min(Number.MAX_SAFE_INTEGER, g.last * times);
        i += counted[0].length;
      } else {
        atom(1);
        i++;
      }
    } else if (c === '|') {
      top().last = 0;
      i++;
    } else if (c === '*' || c === '+' || c === '?') {
      i++;
    } else {
      atom(1);
      i++;
    }
  }
  while (groups.length > 1) {
    const group = groups.pop() as { total: number };
    top().total += group.total;
  }
  return top().total;
}
