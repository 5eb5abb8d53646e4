//! One line of an ignore file, compiled once into a few tokens and matched as git matches it: `dir.c`'s
//! reading of the line (`trim_trailing_spaces`, `parse_path_pattern`) and `wildmatch.c`'s matching, its
//! aborts included (a `*` that cannot match gives up the whole match rather than backtracking further,
//! which keeps a pattern of many stars from taking exponential time). Bytes throughout, as git: case
//! sensitive, the classes ASCII only.

/// What one line says.
pub struct Pattern {
    /// `!`: the line re-includes what it matches.
    pub negated: bool,
    /// A trailing `/`: folders only.
    pub dir_only: bool,
    /// No `/` but a trailing one (or `**/` and then none): matched against the name at any depth; otherwise
    /// against the path from the ignore file's folder.
    basename: bool,
    how: How,
}

enum How {
    /// No wildcard: the whole text, byte for byte.
    Literal(Box<[u8]>),
    /// `*` and then no wildcard (a name only): the text's end.
    Suffix(Box<[u8]>),
    /// No wildcard and then a star at the end: the text's start, and no `/` after it unless the star takes one.
    Prefix(Box<[u8]>, Star),
    Glob(Box<[Token]>),
}

#[derive(Clone, PartialEq)]
enum Token {
    /// A byte as it is (a `\` escape resolved).
    Byte(u8),
    /// `?`: any byte but `/`.
    One,
    /// `[...]`: the bytes it takes, a bit each (`/` never, as in a path).
    Class(Box<[u64; 4]>),
    Star(Star),
}

#[derive(Clone, Copy, PartialEq)]
struct Star {
    /// Takes `/` too: a `**` that is a whole component (`**/`, `/**/`, `/**`), and any star matched against a
    /// name (which holds none). Any other is a `*`, which stops at a `/`.
    slash: bool,
    /// `**/` (an unescaped slash after): may also match no folder at all, the slash included.
    zero_dirs: bool,
}

/// The most star runs a line may hold; one with more is left out (a matcher recurses once per star; no
/// real ignore file comes near).
pub(super) const MAX_STARS: usize = 128;
/// Steps one match may take before it is given up as no match (a pathological pattern on a long path;
/// real ones take a few hundred at most).
const BUDGET: u32 = 1 << 16;

impl Pattern {
    /// The pattern of one line (without its line end), or `None` for a blank line, a comment, or one that
    /// is left out: one that can match nothing (an unclosed `[`, an unknown `[:class:]`, a trailing lone
    /// `\`, which git keeps but never matches) or holds more than `MAX_STARS` stars.
    pub fn parse(line: &[u8]) -> Option<Pattern> {
        // git reads a line as a C string: a NUL ends it.
        let line = line.split(|&b| b == 0).next().unwrap_or_default();
        if line.is_empty() || line[0] == b'#' {
            return None;
        }
        let mut p = trim_trailing_spaces(line);
        let negated = p.first() == Some(&b'!');
        if negated {
            p = &p[1..];
        }
        let dir_only = p.last() == Some(&b'/');
        if dir_only {
            p = &p[..p.len() - 1];
        }
        let mut basename = !p.contains(&b'/');
        if !basename && p[0] == b'/' {
            p = &p[1..];
        }
        if p.is_empty() {
            return None;
        }
        let mut tokens = compile(p, !basename)?;
        // `**/name` matches what `name` alone does (the name at any depth: its stars and classes meet no `/`
        // either way), and then often by a fast path.
        if let [Token::Star(Star { zero_dirs: true, .. }), Token::Byte(b'/'), rest @ ..] = &tokens[..] {
            if !rest.is_empty() && !rest.contains(&Token::Byte(b'/')) {
                tokens.drain(..2);
                basename = true;
            }
        }
        let how = simplest(tokens, basename)?;
        Some(Pattern { negated, dir_only, basename, how })
    }

    /// Whether the pattern matches `rel`, a path from the ignore file's folder (`/`-separated), whose last
    /// component is `name`.
    pub fn matches(&self, rel: &[u8], name: &[u8]) -> bool {
        let text = if self.basename { name } else { rel };
        match &self.how {
            How::Literal(lit) => text == &lit[..],
            How::Suffix(end) => text.ends_with(end),
            How::Prefix(start, star) => text.starts_with(start) && (star.slash || !text[start.len()..].contains(&b'/')),
            How::Glob(tokens) => {
                let mut m = Matcher { tokens, pathname: !self.basename, budget: BUDGET };
                m.dowild(0, text, 0) == Wild::Match
            }
        }
    }
}

/// `dir.c`'s `trim_trailing_spaces`: trailing spaces go unless escaped with `\` (a line ending in a lone `\`
/// keeps its spaces).
fn trim_trailing_spaces(line: &[u8]) -> &[u8] {
    let mut last_space = None;
    let mut i = 0;
    while i < line.len() {
        match line[i] {
            b' ' => {
                last_space.get_or_insert(i);
            }
            b'\\' => {
                i += 1;
                if i == line.len() {
                    return line;
                }
                last_space = None;
            }
            _ => last_space = None,
        }
        i += 1;
    }
    &line[..last_space.unwrap_or(line.len())]
}

/// The tokens of `p`, or `None` when it can match nothing.
fn compile(p: &[u8], pathname: bool) -> Option<Vec<Token>> {
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < p.len() {
        match p[i] {
            b'\\' => {
                tokens.push(Token::Byte(*p.get(i + 1)?));
                i += 2;
            }
            b'?' => {
                tokens.push(Token::One);
                i += 1;
            }
            b'[' => {
                let (set, end) = class(p, i + 1)?;
                tokens.push(Token::Class(Box::new(set)));
                i = end;
            }
            b'*' => {
                let start = i;
                while p.get(i) == Some(&b'*') {
                    i += 1;
                }
                // wildmatch.c: `**` crosses `/` only as a whole component (or in a name, where every star
                // may); elsewhere it is a lone `*`.
                let after_boundary = start == 0 || p[start - 1] == b'/';
                let before_boundary = i == p.len() || p[i] == b'/' || p[i..].starts_with(b"\\/");
                let double = i - start > 1 && after_boundary && before_boundary;
                let slash = !pathname || double;
                tokens.push(Token::Star(Star { slash, zero_dirs: pathname && double && p.get(i) == Some(&b'/') }));
            }
            b => {
                tokens.push(Token::Byte(b));
                i += 1;
            }
        }
    }
    Some(tokens)
}

/// The fastest form that matches as `tokens` would; `None` when the line is left out.
fn simplest(tokens: Vec<Token>, basename: bool) -> Option<How> {
    let literal = |t: &[Token]| -> Option<Box<[u8]>> {
        t.iter().map(|t| if let Token::Byte(b) = t { Some(*b) } else { None }).collect()
    };
    if let Some(lit) = literal(&tokens) {
        return Some(How::Literal(lit));
    }
    if let (true, [Token::Star(_), end @ ..]) = (basename, &tokens[..]) {
        if let Some(end) = literal(end) {
            return Some(How::Suffix(end));
        }
    }
    if let [start @ .., Token::Star(star)] = &tokens[..] {
        if let Some(start) = literal(start) {
            return Some(How::Prefix(start, *star));
        }
    }
    let stars = tokens.iter().filter(|t| matches!(t, Token::Star(_))).count();
    (stars <= MAX_STARS).then(|| How::Glob(tokens.into()))
}

/// The class that starts after a `[` at `p[i]`: its bytes and the index after its `]`, or `None` when it is
/// malformed (unclosed, or an unknown `[:name:]`), as wildmatch reads it: `!` or `^` first negates, a `]`
/// first (after that) is a member, `a-z` a range, `\` escapes, `[:alpha:]` and its kin name ASCII classes.
fn class(p: &[u8], mut i: usize) -> Option<([u64; 4], usize)> {
    let mut set = [0u64; 4];
    let add = |set: &mut [u64; 4], b: u8| set[(b >> 6) as usize] |= 1 << (b & 63);
    let negated = matches!(p.get(i), Some(b'!' | b'^'));
    if negated {
        i += 1;
    }
    let mut prev: Option<u8> = None;
    let mut first = true;
    loop {
        let c = *p.get(i)?;
        if c == b']' && !first {
            break;
        }
        first = false;
        if c == b'\\' {
            i += 1;
            let e = *p.get(i)?;
            add(&mut set, e);
            prev = Some(e);
        } else if c == b'-' && prev.is_some() && p.get(i + 1).is_some_and(|&n| n != b']') {
            i += 1;
            let mut hi = p[i];
            if hi == b'\\' {
                i += 1;
                hi = *p.get(i)?;
            }
            for b in prev.unwrap_or(hi)..=hi {
                add(&mut set, b);
            }
            prev = None;
        } else if c == b'[' && p.get(i + 1) == Some(&b':') {
            let s = i + 2;
            let close = s + p[s..].iter().position(|&b| b == b']')?;
            if close == s || p[close - 1] != b':' {
                // No `:]`: a plain `[`, the rest read as members.
                add(&mut set, b'[');
                prev = Some(b'[');
            } else {
                let test = named(&p[s..close - 1])?;
                (0..=255u8).filter(|&b| test(b)).for_each(|b| add(&mut set, b));
                prev = None;
                i = close;
            }
        } else {
            add(&mut set, c);
            prev = Some(c);
        }
        i += 1;
    }
    if negated {
        set.iter_mut().for_each(|w| *w = !*w);
    }
    set[0] &= !(1 << b'/');
    Some((set, i + 1))
}

/// A `[:name:]` class, as git's locale-free ctype has it.
fn named(name: &[u8]) -> Option<fn(u8) -> bool> {
    Some(match name {
        b"alnum" => |b: u8| b.is_ascii_alphanumeric(),
        b"alpha" => |b: u8| b.is_ascii_alphabetic(),
        b"blank" => |b: u8| b == b' ' || b == b'\t',
        b"cntrl" => |b: u8| b.is_ascii_control(),
        b"digit" => |b: u8| b.is_ascii_digit(),
        b"graph" => |b: u8| b.is_ascii_graphic(),
        b"lower" => |b: u8| b.is_ascii_lowercase(),
        b"print" => |b: u8| b.is_ascii_graphic() || b == b' ',
        b"punct" => |b: u8| b.is_ascii_punctuation(),
        // git's isspace: no vertical tab nor form feed.
        b"space" => |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r'),
        b"upper" => |b: u8| b.is_ascii_uppercase(),
        b"xdigit" => |b: u8| b.is_ascii_hexdigit(),
        _ => return None,
    })
}

/// wildmatch's results: the aborts tell an enclosing star that trying further along cannot help.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Wild {
    Match,
    NoMatch,
    /// Give up the whole match.
    AbortAll,
    /// A `*` met a `/`: only an enclosing `**` may try further along.
    AbortToStarStar,
}

struct Matcher<'a> {
    tokens: &'a [Token],
    /// `*`, `?` and classes stop at `/` (a path, not a name).
    pathname: bool,
    budget: u32,
}

impl Matcher<'_> {
    /// Counts `steps` bytes looked at against the budget.
    fn charge(&mut self, steps: usize) {
        self.budget = self.budget.saturating_sub(u32::try_from(steps).unwrap_or(u32::MAX));
    }

    /// `wildmatch.c`'s `dowild`: the tokens from `p` against `text` from `t`.
    fn dowild(&mut self, mut p: usize, text: &[u8], mut t: usize) -> Wild {
        while let Some(token) = self.tokens.get(p) {
            if self.budget == 0 {
                return Wild::AbortAll;
            }
            self.budget -= 1;
            let Token::Star(star) = token else {
                let Some(&c) = text.get(t) else { return Wild::AbortAll };
                let ok = match token {
                    Token::Byte(b) => c == *b,
                    Token::One => !(self.pathname && c == b'/'),
                    Token::Class(set) => set[(c >> 6) as usize] & (1 << (c & 63)) != 0,
                    Token::Star(_) => unreachable!("handled above"),
                };
                if !ok {
                    return Wild::NoMatch;
                }
                p += 1;
                t += 1;
                continue;
            };
            return self.star(*star, p + 1, text, t);
        }
        if t < text.len() {
            Wild::NoMatch
        } else {
            Wild::Match
        }
    }

    /// A star run whose next token is `p`, at `text[t]`.
    fn star(&mut self, star: Star, p: usize, text: &[u8], mut t: usize) -> Wild {
        if star.zero_dirs && self.dowild(p + 1, text, t) == Wild::Match {
            return Wild::Match;
        }
        let Some(next) = self.tokens.get(p) else {
            // A trailing `**` takes everything; a trailing `*` only what holds no `/`.
            if !star.slash && text[t..].contains(&b'/') {
                return Wild::AbortToStarStar;
            }
            return Wild::Match;
        };
        if !star.slash && *next == Token::Byte(b'/') {
            // `*/` takes the rest of the component, no less.
            let Some(i) = text[t..].iter().position(|&b| b == b'/') else { return Wild::AbortAll };
            self.charge(i);
            return self.dowild(p + 1, text, t + i + 1);
        }
        while t < text.len() {
            if let Token::Byte(b) = *next {
                // What comes before the next literal byte belongs to the star.
                let from = t;
                while t < text.len() && text[t] != b && (star.slash || text[t] != b'/') {
                    t += 1;
                }
                self.charge(t - from);
                if text.get(t) != Some(&b) {
                    return if star.slash { Wild::AbortAll } else { Wild::AbortToStarStar };
                }
            }
            let m = self.dowild(p, text, t);
            if m != Wild::NoMatch {
                if !star.slash || m != Wild::AbortToStarStar {
                    return m;
                }
            } else if !star.slash && text[t] == b'/' {
                return Wild::AbortToStarStar;
            }
            t += 1;
        }
        Wild::AbortAll
    }
}
