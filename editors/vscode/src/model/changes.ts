// The Changes view's title: what the view holds, said in its header, so a collapsed view tells whether there is
// anything to review. Pure logic: no `vscode` import.

/** `Changes 3 files` (all to review), `Changes 3 files, 1 to review`, `Changes 3 files, reviewed`; `Changes` when the
 * agent changed nothing. */
export function changesTitle(files: { reviewed?: boolean }[]): string {
  const n = files.length;
  if (n === 0) return 'Changes';
  const open = files.filter((f) => !f.reviewed).length;
  const count = `Changes ${n} file${n === 1 ? '' : 's'}`;
  if (open === n) return count;
  return open === 0 ? `${count}, reviewed` : `${count}, ${open} to review`;
}
