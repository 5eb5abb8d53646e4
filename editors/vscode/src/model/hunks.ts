// The hunks between a file's text before the agent's changes and its text now: which lines of the new text
// changed (for the editor's decorations) and which were removed. A line diff (Myers' O(ND), bounded so a huge
// rewrite is one hunk). Pure logic: no `vscode` import.

export interface Hunk {
  /** First line of the hunk in the new text (0-based) and how many lines it has there (0: only removed). */
  start: number;
  count: number;
  /** The same in the old text. */
  oldStart: number;
  oldCount: number;
}

/** The most edit steps tried before the middle of the texts is taken as one hunk. */
const MAX_D = 2000;

export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split(/\r?\n/);
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

export function hunks(before: string, after: string): Hunk[] {
  const a = splitLines(before);
  const b = splitLines(after);
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const x = a.slice(pre, a.length - suf);
  const y = b.slice(pre, b.length - suf);
  if (x.length === 0 && y.length === 0) return [];
  const same = matches(x, y);
  if (!same) return [{ start: pre, count: y.length, oldStart: pre, oldCount: x.length }];
  // Walk the matched pairs; the gaps between them are the hunks.
  const out: Hunk[] = [];
  let i = 0;
  let j = 0;
  for (const [mi, mj] of [...same, [x.length, y.length] as [number, number]]) {
    if (mi > i || mj > j) out.push({ start: pre + j, count: mj - j, oldStart: pre + i, oldCount: mi - i });
    i = mi + 1;
    j = mj + 1;
  }
  return out;
}

/** The pairs of equal lines of a shortest edit script (Myers), or undefined past MAX_D steps. */
function matches(a: string[], b: string[]): [number, number][] | undefined {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, MAX_D);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? v[offset + k + 1] : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, a, b, d, offset);
    }
  }
  return undefined;
}

function backtrack(trace: Int32Array[], a: string[], b: string[], dEnd: number, offset: number): [number, number][] {
  const pairs: [number, number][] = [];
  let x = a.length;
  let y = b.length;
  for (let d = dEnd; d >= 0; d--) {
    const v = trace[d];
    const k = x - y;
    const prevK = d === 0 ? 0 : k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1]) ? k + 1 : k - 1;
    const prevX = d === 0 ? 0 : v[offset + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      pairs.push([x, y]);
    }
    x = prevX;
    y = prevY;
  }
  return pairs.reverse();
}
