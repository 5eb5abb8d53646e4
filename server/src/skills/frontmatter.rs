//! A `SKILL.md`'s frontmatter: the YAML between a first line `---` and the next, read as a flat mapping.
//!
//! Written here rather than taken from a YAML crate: none is in the tree, one would add to the release
//! binary for three fields, and a skill's frontmatter is a handful of top-level `key: value` lines. What
//! the format's files use is read: plain, single- and double-quoted scalars (over several lines too), `|`
//! and `>` block scalars, comments; nested mappings, lists and flow collections are skipped as a whole
//! (they belong to fields stepwise ignores: `metadata`, `allowed-tools`). Anything else is an error
//! naming its line, so a skill is never read differently from what its author meant without a word.

use std::collections::HashMap;

/// The fields of one frontmatter, as text (`None`: a field given as a mapping or list), and where the body
/// starts in the text.
#[derive(Debug, Default, PartialEq)]
pub struct Frontmatter {
    pub fields: HashMap<String, Option<Scalar>>,
    /// The byte offset of the body: the text after the closing `---` line.
    pub body_at: usize,
}

/// A scalar value and whether it was quoted (`true` quoted is text, not a boolean).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scalar {
    pub text: String,
    pub quoted: bool,
}

/// Reads the frontmatter at the head of `text`.
pub fn parse(text: &str) -> Result<Frontmatter, String> {
    let mut lines = Lines::new(text.strip_prefix('\u{feff}').unwrap_or(text));
    let offset = text.len() - lines.rest.len();
    match lines.next() {
        Some((_, l)) if l.trim_end() == "---" => {}
        _ => return Err("no frontmatter: the file must begin with a line `---`".into()),
    }
    let mut yaml = Vec::new();
    let body_at = loop {
        match lines.next() {
            Some((_, l)) if l.trim_end() == "---" => break offset + lines.consumed,
            Some((n, l)) => yaml.push((n, l)),
            None => return Err("the frontmatter has no closing line `---`".into()),
        }
    };
    Ok(Frontmatter { fields: mapping(&yaml)?, body_at })
}

/// Lines with their 1-based numbers, `\r\n` or `\n` ended.
struct Lines<'a> {
    rest: &'a str,
    consumed: usize,
    number: usize,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Self {
        Lines { rest: text, consumed: 0, number: 0 }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = (usize, &'a str);
    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let end = self.rest.find('\n').map_or(self.rest.len(), |i| i + 1);
        let (line, rest) = self.rest.split_at(end);
        self.rest = rest;
        self.consumed += end;
        self.number += 1;
        Some((self.number, line.trim_end_matches('\n').trim_end_matches('\r')))
    }
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn blank_or_comment(line: &str) -> bool {
    let t = line.trim();
    t.is_empty() || t.starts_with('#')
}

/// The top-level mapping: each key at column 0, its value on its line and the lines indented under it.
fn mapping(lines: &[(usize, &str)]) -> Result<HashMap<String, Option<Scalar>>, String> {
    let mut fields = HashMap::new();
    let mut i = 0;
    while i < lines.len() {
        let (n, line) = lines[i];
        i += 1;
        if blank_or_comment(line) {
            continue;
        }
        if line.starts_with('\t') || indent(line) > 0 {
            return Err(format!("frontmatter line {n}: indented, but not under a key"));
        }
        let Some((key, value)) = split_key(line) else {
            return Err(format!("frontmatter line {n}: expected `key: value`"));
        };
        // The lines that belong to this key: indented ones, blank ones, and a list's `- ` lines.
        let start = i;
        while i < lines.len() {
            let l = lines[i].1;
            let under = l.trim().is_empty() || indent(l) > 0 || l.starts_with(['\t', '#']);
            if !(under || l.starts_with("- ") || l == "-") {
                break;
            }
            i += 1;
        }
        // Trailing blank and comment lines belong to no one.
        let mut end = i;
        while end > start && blank_or_comment(lines[end - 1].1) {
            end -= 1;
        }
        let value = self::value(n, value, &lines[start..end])?;
        if fields.insert(key.to_string(), value).is_some() {
            return Err(format!("frontmatter line {n}: `{key}` is given twice"));
        }
    }
    Ok(fields)
}

/// `key: value` (the colon followed by a space or the end of the line), the key plain or quoted.
fn split_key(line: &str) -> Option<(&str, &str)> {
    let (key, rest) = if let Some(q @ ('"' | '\'')) = line.chars().next() {
        let close = line[1..].find(q)? + 1;
        (&line[1..close], line[close + 1..].strip_prefix(':')?)
    } else {
        let at = line
            .match_indices(':')
            .map(|(i, _)| i)
            .find(|&i| line[i + 1..].is_empty() || line[i + 1..].starts_with(' ') || line[i + 1..].starts_with('\t'))?;
        (line[..at].trim_end(), &line[at + 1..])
    };
    if !rest.is_empty() && !rest.starts_with([' ', '\t']) {
        return None;
    }
    (!key.is_empty()).then_some((key, rest.trim()))
}

/// A key's value: `inline` (after the colon) and the lines under it.
fn value(n: usize, inline: &str, under: &[(usize, &str)]) -> Result<Option<Scalar>, String> {
    let plain = |text: String| Ok(Some(Scalar { text, quoted: false }));
    match inline.chars().next() {
        None => {
            let first = under.iter().map(|(_, l)| *l).find(|l| !blank_or_comment(l));
            match first {
                None => plain(String::new()),
                // A nested mapping or a list: a field stepwise does not read.
                Some(l) if l.trim_start().starts_with("- ") || l.trim() == "-" || split_key(l.trim()).is_some() => {
                    Ok(None)
                }
                Some(_) => plain(fold_plain("", under)),
            }
        }
        Some('|' | '>') => block(n, inline, under).map(|text| Some(Scalar { text, quoted: false })),
        Some(q @ ('"' | '\'')) => quoted(n, q, inline, under).map(|text| Some(Scalar { text, quoted: true })),
        Some('[' | '{') => Ok(None),
        Some('&' | '*' | '!') => Err(format!("frontmatter line {n}: anchors, aliases and tags are not read")),
        Some(_) => plain(fold_plain(strip_comment(inline), under)),
    }
}

/// A plain scalar's text without a trailing ` # comment` (a `#` after a space or a tab).
fn strip_comment(text: &str) -> &str {
    let b = text.as_bytes();
    let cut = memchr::memchr_iter(b'#', b).find(|&i| i > 0 && matches!(b[i - 1], b' ' | b'\t'));
    cut.map_or(text, |i| &text[..i - 1]).trim_end()
}

/// A plain scalar over several lines: lines joined by a space, a blank line a line break.
fn fold_plain(first: &str, under: &[(usize, &str)]) -> String {
    let mut out = first.trim().to_string();
    let mut breaks = 0;
    for (_, l) in under {
        let t = l.trim();
        if t.is_empty() {
            breaks += 1;
            continue;
        }
        if t.starts_with('#') {
            break;
        }
        if !out.is_empty() {
            out.push_str(&if breaks > 0 { "\n".repeat(breaks) } else { " ".into() });
        }
        breaks = 0;
        out.push_str(strip_comment(t));
    }
    out
}

/// A `|` (literal) or `>` (folded) block scalar, with its chomping indicator (`-` strip, `+` keep).
fn block(n: usize, header: &str, under: &[(usize, &str)]) -> Result<String, String> {
    let header = strip_comment(header);
    let literal = header.starts_with('|');
    let mut chomp = ' ';
    let mut width = None;
    for c in header[1..].chars() {
        match c {
            '-' | '+' => chomp = c,
            '1'..='9' => width = c.to_digit(10).map(|d| d as usize),
            _ => return Err(format!("frontmatter line {n}: `{header}` is not a block scalar's header")),
        }
    }
    let lines: Vec<&str> = under.iter().map(|(_, l)| *l).collect();
    let width = width.or_else(|| lines.iter().find(|l| !l.trim().is_empty()).map(|l| indent(l))).unwrap_or(0);
    let mut text = String::new();
    let mut prev_more = false;
    let mut breaks = 0;
    for (i, l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            breaks += 1;
            continue;
        }
        if indent(l) < width {
            return Err(format!("frontmatter line {}: less indented than its block", under[i].0));
        }
        let content = &l[width..];
        let more = content.starts_with([' ', '\t']);
        if !text.is_empty() || breaks > 0 {
            if literal || more || prev_more {
                text.push_str(&"\n".repeat(breaks + 1));
            } else {
                text.push_str(&if breaks > 0 { "\n".repeat(breaks) } else { " ".into() });
            }
        }
        breaks = 0;
        prev_more = more;
        text.push_str(content);
    }
    match chomp {
        '-' => {}
        '+' => text.push_str(&"\n".repeat(breaks + 1)),
        _ if !text.is_empty() => text.push('\n'),
        _ => {}
    }
    Ok(text)
}

/// A quoted scalar, perhaps over several lines (line breaks fold to a space, a blank line is a break).
fn quoted(n: usize, quote: char, inline: &str, under: &[(usize, &str)]) -> Result<String, String> {
    let mut raw = inline[1..].to_string();
    for (_, l) in under {
        raw.push('\n');
        raw.push_str(l);
    }
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    let unclosed = || format!("frontmatter line {n}: the quoted value is not closed");
    loop {
        let c = chars.next().ok_or_else(unclosed)?;
        match c {
            c if c == quote => {
                if quote == '\'' && chars.peek() == Some(&'\'') {
                    chars.next();
                    out.push('\'');
                    continue;
                }
                break;
            }
            '\\' if quote == '"' => out.push(escape(n, &mut chars)?),
            '\n' => {
                // Folding: trailing and leading spaces go; one break is a space, more are breaks.
                while out.ends_with([' ', '\t']) {
                    out.pop();
                }
                let mut breaks = 0;
                while let Some(&c) = chars.peek() {
                    match c {
                        ' ' | '\t' => {}
                        '\n' => breaks += 1,
                        _ => break,
                    }
                    chars.next();
                }
                out.push_str(&if breaks > 0 { "\n".repeat(breaks) } else { " ".into() });
            }
            c => out.push(c),
        }
    }
    let rest: String = chars.collect();
    if !blank_or_comment(&rest) {
        return Err(format!("frontmatter line {n}: text after the closing quote"));
    }
    Ok(out)
}

fn escape(n: usize, chars: &mut std::iter::Peekable<std::str::Chars>) -> Result<char, String> {
    let bad = || format!("frontmatter line {n}: an unknown escape in a double-quoted value");
    let hex = |chars: &mut std::iter::Peekable<std::str::Chars>, len: usize| {
        let digits: String = chars.take(len).collect();
        u32::from_str_radix(&digits, 16).ok().filter(|_| digits.len() == len).and_then(char::from_u32)
    };
    Ok(match chars.next().ok_or_else(bad)? {
        'n' => '\n',
        't' | '\t' => '\t',
        'r' => '\r',
        '0' => '\0',
        ' ' => ' ',
        '"' => '"',
        '/' => '/',
        '\\' => '\\',
        'x' => hex(chars, 2).ok_or_else(bad)?,
        'u' => hex(chars, 4).ok_or_else(bad)?,
        'U' => hex(chars, 8).ok_or_else(bad)?,
        _ => return Err(bad()),
    })
}
