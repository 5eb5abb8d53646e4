// When a document's diagnostics are those of a version (the server's `stepwise/query`, docs/protocol.md "Code
// intelligence"), as pure logic: the answerer (connection/query.ts) feeds it VS Code's events and asks it.
//
// A language server that publishes says so by a change of the document's diagnostics after it reached the version.
// VS Code fires no change when they stay the same (TypeScript publishes nothing when empty stays empty), so a
// document is also settled by quiet: unchanged, with no diagnostics change, for well past its server's usual time.
// Quiet may only count once the document's server is known to be there and to have looked at the version:
//  - its language was seen publishing in this window (a time from a version to its diagnostics was learned; not
//    the first, which carries the server's start): then twice the slowest recent time, at least `floorMs`, from
//    the moment the document reached the version;
//  - or its language's server answered a look at this version (the answerer asks the document's symbols, which
//    a language server answers only once it has the text, its start included): then `firstQuietMs` from that
//    answer (or from the change, if later), the time a server that has the text takes to publish (TypeScript asks
//    for diagnostics 300-800 ms after a change, and publishes nothing when a file stays clean).
// A look that found nothing (no server answers symbols for the language, or the file names none) is no sign of
// a server: the document is given up `lookMs` after it reached the version, and answered unsettled, so the model
// reads `not checked` with the time really waited instead of a silence that reads as clean, and the round is not
// held for the whole wait. Plain text, which no server checks, is settled at once.

/** Languages no language server of VS Code's own checks. */
const UNCHECKED_LANGUAGES = new Set(['plaintext', 'log']);

/** Where a document stands for a version. */
export type Standing = 'settled' | 'waiting' | 'given-up';

export interface Timing {
  /** The least quiet of a language seen publishing. */
  floorMs: number;
  /** The quiet after a look that found the server there, for a language not yet seen publishing. */
  firstQuietMs: number;
  /** How long a document whose look found no server is waited for. */
  lookMs: number;
}

export const DEFAULT_TIMING: Timing = { floorMs: 300, firstQuietMs: 1500, lookMs: 1500 };

export class Settling {
  /** uri -> the document's version when its diagnostics last changed (-1: the document was not open). */
  private readonly published = new Map<string, number>();
  /** uri -> when the document reached its current version, and its language. */
  private readonly reached = new Map<string, { version: number; at: number; language: string }>();
  /** uri -> the last look answered: at which version, when, and whether it found the server there. */
  private readonly looks = new Map<string, { version: number; at: number; found: boolean }>();
  /** Languages seen publishing once (that time, the server's start included, is not learned). */
  private readonly started = new Set<string>();
  /** language -> recent times from a version to its diagnostics (ms), newest last. */
  private readonly latencies = new Map<string, number[]>();

  constructor(private readonly timing: Timing = DEFAULT_TIMING) {}

  /** A document changed to `version` (or was opened) at `now`; the same version again keeps the first time. */
  changed(uri: string, version: number, language: string, now: number): void {
    const r = this.reached.get(uri);
    if (r && r.version === version && r.language === language) return;
    this.reached.set(uri, { version, at: now, language });
  }

  /** The document's diagnostics changed at `now`, while it was at `version` (undefined: not open). */
  publishedAt(uri: string, version: number | undefined, now: number): void {
    this.published.set(uri, version ?? -1);
    const r = this.reached.get(uri);
    if (r && version !== undefined && r.version === version) {
      // A language's first publish in the window carries its server's start, which later rounds do not pay.
      if (!this.started.has(r.language)) {
        this.started.add(r.language);
        return;
      }
      const list = this.latencies.get(r.language) ?? [];
      list.push(now - r.at);
      if (list.length > 8) list.shift();
      this.latencies.set(r.language, list);
    }
  }

  /** The document's server answered a look at `version` at `now`; `found`: it named anything. */
  looked(uri: string, version: number, found: boolean, now: number): void {
    this.looks.set(uri, { version, at: now, found });
  }

  /** Whether a look at the document would tell anything: it waits, and its language's server is not known. */
  needsLook(uri: string, version: number, now: number): boolean {
    const r = this.reached.get(uri);
    if (!r || r.version < version || this.standing(uri, version, now) !== 'waiting') return false;
    if (this.learned(r.language) !== undefined) return false;
    const look = this.looks.get(uri);
    return !look || look.version < r.version;
  }

  /** Where the document stands for `version` (undefined: whatever text it has, settled by any publish). */
  standing(uri: string, version: number | undefined, now: number): Standing {
    const p = this.published.get(uri);
    if (version === undefined) return p !== undefined ? 'settled' : 'waiting';
    if (p !== undefined && p >= version) return 'settled';
    const until = this.until(uri, version);
    if (until === undefined) return 'waiting';
    if (now < until.at) return 'waiting';
    return until.then;
  }

  /** Whether the document's diagnostics are those of `version`. */
  settled(uri: string, version: number | undefined, now: number): boolean {
    return this.standing(uri, version, now) === 'settled';
  }

  /** In how many ms from `now` the standing may change without an event (undefined: only by an event). */
  nextCheck(uri: string, version: number | undefined, now: number): number | undefined {
    if (version === undefined) return undefined;
    const until = this.until(uri, version);
    return until && Math.max(0, until.at - now);
  }

  forget(uri: string): void {
    this.reached.delete(uri);
    this.published.delete(uri);
    this.looks.delete(uri);
  }

  /** The quiet of a language seen publishing (undefined: never seen). */
  private learned(language: string): number | undefined {
    const seen = this.latencies.get(language);
    if (!seen || seen.length === 0) return undefined;
    return Math.max(this.timing.floorMs, 2 * Math.max(...seen));
  }

  /** When the document stops waiting for `version` without an event, and how; undefined: only by an event. */
  private until(uri: string, version: number): { at: number; then: Standing } | undefined {
    const r = this.reached.get(uri);
    if (!r || r.version < version) return undefined;
    if (UNCHECKED_LANGUAGES.has(r.language)) return { at: r.at, then: 'settled' };
    const quiet = this.learned(r.language);
    if (quiet !== undefined) return { at: r.at + quiet, then: 'settled' };
    const look = this.looks.get(uri);
    if (!look || look.version < version) return undefined;
    if (look.found) return { at: Math.max(r.at, look.at) + this.timing.firstQuietMs, then: 'settled' };
    return { at: Math.max(r.at + this.timing.lookMs, look.at), then: 'given-up' };
  }
}
