//! JSON read with the byte span of every value, and edited as text: how herdr changes a
//! settings file that belongs to the user (Claude Code's `settings.json`).
//!
//! Invariant: an edit replaces only the bytes it names; every other byte of the text —
//! numbers as written (`1e2`, `12345678901234567890`), key order, duplicate keys,
//! whitespace and indentation — stays as it was. Only text that serde_json accepts is
//! read at all, so a file herdr cannot read is never edited. serde_json checks the syntax
//! without recursing; this parser recurses at most `MAX_DEPTH` levels.

use std::ops::Range;

use serde_json::Value;

/// The deepest nesting read (levels of objects and arrays). The parser recurses once per
/// level, so this bounds its stack; settings files nest a handful of levels, and 128 is
/// also serde_json's own limit when it builds values.
const MAX_DEPTH: usize = 128;

const BOM: &str = "\u{feff}";

#[derive(Debug, thiserror::Error)]
pub enum JsonError {
    #[error(transparent)]
    Syntax(#[from] serde_json::Error),
    #[error("nested more than {MAX_DEPTH} levels deep at line {0}")]
    TooDeep(usize),
    /// serde_json accepted text this parser did not: a bug here, never the user's.
    #[error("cannot follow the JSON at byte {0}")]
    Unreadable(usize),
}

/// A value and where it is in the text (`span` covers it from its first byte to its last).
#[derive(Debug)]
pub struct Node {
    pub span: Range<usize>,
    pub kind: Kind,
}

#[derive(Debug)]
pub enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    String(String),
    /// A number, `true`, `false` or `null`: never needed, so never decoded.
    Other,
}

#[derive(Debug)]
pub struct Member {
    pub key: String,
    /// Where the member starts: its key's opening quote.
    pub start: usize,
    pub value: Node,
}

impl Node {
    /// The value of `key` in an object. With duplicate keys the last one counts, as it
    /// does for JavaScript's `JSON.parse` and for serde_json.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.members()?
            .iter()
            .rev()
            .find(|m| m.key == key)
            .map(|m| &m.value)
    }

    /// The index of the member that `get` reads.
    pub fn position(&self, key: &str) -> Option<usize> {
        self.members()?.iter().rposition(|m| m.key == key)
    }

    pub fn members(&self) -> Option<&[Member]> {
        match &self.kind {
            Kind::Object(members) => Some(members),
            _ => None,
        }
    }

    pub fn elements(&self) -> Option<&[Node]> {
        match &self.kind {
            Kind::Array(elements) => Some(elements),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match &self.kind {
            Kind::String(s) => Some(s),
            _ => None,
        }
    }

    /// Where each member or element is, from its first byte to its last.
    fn children(&self) -> Vec<Range<usize>> {
        match &self.kind {
            Kind::Object(members) => members.iter().map(|m| m.start..m.value.span.end).collect(),
            Kind::Array(elements) => elements.iter().map(|e| e.span.clone()).collect(),
            _ => Vec::new(),
        }
    }
}

/// Reads `text` (a leading byte-order mark is skipped and kept).
pub fn parse(text: &str) -> Result<Node, JsonError> {
    let start = if text.starts_with(BOM) { BOM.len() } else { 0 };
    serde_json::from_str::<serde::de::IgnoredAny>(&text[start..])?;
    let mut parser = Parser {
        text: text.as_bytes(),
        at: start,
    };
    parser.value(0)
}

struct Parser<'a> {
    text: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn fail<T>(&self) -> Result<T, JsonError> {
        Err(JsonError::Unreadable(self.at))
    }

    fn expect(&mut self, byte: u8) -> Result<(), JsonError> {
        self.skip_space();
        if self.peek() != Some(byte) {
            return self.fail();
        }
        self.at += 1;
        Ok(())
    }

    fn value(&mut self, depth: usize) -> Result<Node, JsonError> {
        if depth > MAX_DEPTH {
            let line = self.text[..self.at].iter().filter(|b| **b == b'\n').count() + 1;
            return Err(JsonError::TooDeep(line));
        }
        self.skip_space();
        let start = self.at;
        let kind = match self.peek() {
            Some(b'{') => Kind::Object(self.list(b'}', |p| p.member(depth))?),
            Some(b'[') => Kind::Array(self.list(b']', |p| p.value(depth + 1))?),
            Some(b'"') => Kind::String(self.string()?),
            Some(_) => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.at += 1;
                }
                if self.at == start {
                    return self.fail();
                }
                Kind::Other
            }
            None => return self.fail(),
        };
        Ok(Node {
            span: start..self.at,
            kind,
        })
    }

    /// The items of an object or array, the cursor on its opening bracket.
    fn list<T>(
        &mut self,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Result<T, JsonError>,
    ) -> Result<Vec<T>, JsonError> {
        self.at += 1;
        let mut items = Vec::new();
        self.skip_space();
        if self.peek() == Some(close) {
            self.at += 1;
            return Ok(items);
        }
        loop {
            items.push(item(self)?);
            self.skip_space();
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b) if b == close => {
                    self.at += 1;
                    return Ok(items);
                }
                _ => return self.fail(),
            }
        }
    }

    fn member(&mut self, depth: usize) -> Result<Member, JsonError> {
        self.skip_space();
        let start = self.at;
        if self.peek() != Some(b'"') {
            return self.fail();
        }
        let key = self.string()?;
        self.expect(b':')?;
        let value = self.value(depth + 1)?;
        Ok(Member { key, start, value })
    }

    /// A string, the cursor on its opening quote; serde_json decodes the escapes.
    fn string(&mut self) -> Result<String, JsonError> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.peek() {
                Some(b'"') => break,
                Some(b'\\') => self.at += 2,
                Some(_) => self.at += 1,
                None => return self.fail(),
            }
        }
        self.at += 1;
        let raw = std::str::from_utf8(&self.text[start..self.at])
            .map_err(|_| JsonError::Unreadable(start))?;
        Ok(serde_json::from_str(raw)?)
    }
}

/// One replacement of a range of the text.
#[derive(Debug)]
pub struct Edit {
    range: Range<usize>,
    text: String,
}

/// The text with the edits made; they must not overlap.
pub fn apply(text: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| std::cmp::Reverse(e.range.start));
    let mut out = text.to_string();
    for edit in edits {
        out.replace_range(edit.range, &edit.text);
    }
    out
}

/// How the file is laid out, so that what herdr adds looks like the rest.
struct Style {
    eol: &'static str,
    /// One level of indentation: the first indented line's, else two spaces (Claude Code's).
    unit: String,
}

impl Style {
    fn of(text: &str) -> Style {
        let eol = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let unit = text
            .split('\n')
            .skip(1)
            .map(|line| &line[..line.len() - line.trim_start_matches([' ', '\t']).len()])
            .find(|indent| !indent.is_empty())
            .unwrap_or("  ")
            .to_string();
        Style { eol, unit }
    }
}

/// The whitespace a line starts with, for the line holding byte `at`.
fn indent_at(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// `value` as JSON text laid out in `style`, its inner lines indented from `base`.
fn render(value: &Value, base: &str, style: &Style) -> String {
    let inner = format!("{base}{}", style.unit);
    let eol = style.eol;
    let items: Vec<String> = match value {
        Value::Object(map) if !map.is_empty() => map
            .iter()
            .map(|(k, v)| {
                format!(
                    "{inner}{}: {}",
                    Value::from(k.as_str()),
                    render(v, &inner, style)
                )
            })
            .collect(),
        Value::Array(list) if !list.is_empty() => list
            .iter()
            .map(|v| format!("{inner}{}", render(v, &inner, style)))
            .collect(),
        scalar => return scalar.to_string(),
    };
    let (open, close) = if value.is_object() {
        ('{', '}')
    } else {
        ('[', ']')
    };
    format!(
        "{open}{eol}{}{eol}{base}{close}",
        items.join(&format!(",{eol}"))
    )
}

/// What to add to a container: members of an object or elements of an array.
pub enum Items<'a> {
    Members(&'a [(&'a str, Value)]),
    Elements(&'a [Value]),
}

/// Adds `items` after the last member or element of `container` (an object for members,
/// an array for elements), laid out like its neighbours: one per line at their indent in
/// a container that spans lines, on the same line in one that does not. An empty
/// container is laid out over lines when the whole text is.
pub fn append(text: &str, root: &Node, container: &Node, items: Items) -> Edit {
    let style = Style::of(text);
    let children = container.children();
    let multiline = match children.last() {
        Some(_) => text[container.span.clone()].contains('\n'),
        None => root.children().is_empty() || text[root.span.clone()].contains('\n'),
    };
    let indent = match children.last() {
        Some(last)
            if text[..last.start]
                .trim_end_matches([' ', '\t'])
                .ends_with('\n') =>
        {
            indent_at(text, last.start).to_string()
        }
        _ => format!("{}{}", indent_at(text, container.span.start), style.unit),
    };
    let rendered: Vec<String> = match items {
        Items::Members(members) => members
            .iter()
            .map(|(k, v)| {
                let key = Value::from(*k);
                if multiline {
                    format!("{key}: {}", render(v, &indent, &style))
                } else {
                    format!("{key}:{v}")
                }
            })
            .collect(),
        Items::Elements(elements) => elements
            .iter()
            .map(|v| {
                if multiline {
                    render(v, &indent, &style)
                } else {
                    v.to_string()
                }
            })
            .collect(),
    };
    let eol = style.eol;
    let (sep, lead) = if multiline {
        (format!(",{eol}{indent}"), format!("{eol}{indent}"))
    } else {
        (",".to_string(), String::new())
    };
    let joined = rendered.join(&sep);
    match children.last() {
        Some(last) => Edit {
            range: last.end..last.end,
            text: format!("{sep}{joined}"),
        },
        None => {
            let close_indent = indent_at(text, container.span.start);
            let tail = if multiline {
                format!("{eol}{close_indent}")
            } else {
                String::new()
            };
            Edit {
                range: container.span.start + 1..container.span.end - 1,
                text: format!("{lead}{joined}{tail}"),
            }
        }
    }
}

/// Removes the members or elements of `container` whose `keep` is false, with the comma
/// and the line each leaves behind, so the rest reads as if they had never been there;
/// with nothing kept the container becomes `{}` or `[]`; with everything kept nothing changes.
pub fn remove(container: &Node, keep: &[bool]) -> Vec<Edit> {
    let children = container.children();
    let cut = |range: Range<usize>| Edit {
        range,
        text: String::new(),
    };
    if !keep.contains(&false) {
        return Vec::new();
    }
    if !keep.contains(&true) {
        return vec![cut(container.span.start + 1..container.span.end - 1)];
    }
    let mut edits = Vec::new();
    let mut i = 0;
    while i < children.len() {
        if keep.get(i).copied().unwrap_or(true) {
            i += 1;
            continue;
        }
        let first = i;
        while i < children.len() && !keep.get(i).copied().unwrap_or(true) {
            i += 1;
        }
        // A run of removed items: up to the next kept one, else from the end of the kept
        // one before it (there is one: something is kept).
        match children.get(i) {
            Some(next) => edits.push(cut(children[first].start..next.start)),
            None => edits.push(cut(children[first - 1].end..children[i - 1].end)),
        }
    }
    edits
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn spans_cover_each_value_as_written() {
        let text = "\u{feff}{ \"a\" : 1e2, \"b\": [12345678901234567890, \"x\\\"y\"], \"a\": {} }";
        let root = parse(text).unwrap();
        assert_eq!(
            &text[root.get("b").unwrap().span.clone()],
            "[12345678901234567890, \"x\\\"y\"]"
        );
        // The later duplicate counts.
        assert_eq!(&text[root.get("a").unwrap().span.clone()], "{}");
        assert_eq!(root.position("a"), Some(2));
        let b = root.get("b").unwrap().elements().unwrap();
        assert_eq!(b[1].as_str(), Some("x\"y"));
        assert!(parse("{\"a\": }").is_err());
        // Far deeper than any stack would take if anything here recursed per level.
        let deep = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
        let e = parse(&deep).unwrap_err();
        assert!(
            e.to_string()
                .contains("more than 128 levels deep at line 1"),
            "{e}"
        );
    }

    #[test]
    fn appending_follows_the_layout_around() {
        let text = "{\n\t\"a\": [\n\t\t1\n\t],\n\t\"e\": {}\n}";
        let root = parse(text).unwrap();
        let a = root.get("a").unwrap();
        let e = root.get("e").unwrap();
        let edits = vec![
            append(text, &root, a, Items::Elements(&[json!({"k": [2]})])),
            append(text, &root, e, Items::Members(&[("x", json!(1))])),
        ];
        assert_eq!(
            apply(text, edits),
            "{\n\t\"a\": [\n\t\t1,\n\t\t{\n\t\t\t\"k\": [\n\t\t\t\t2\n\t\t\t]\n\t\t}\n\t],\n\t\"e\": {\n\t\t\"x\": 1\n\t}\n}"
        );
        let text = "{\"a\":[1], \"b\":{}}";
        let root = parse(text).unwrap();
        let edits = vec![
            append(
                text,
                &root,
                root.get("a").unwrap(),
                Items::Elements(&[json!([2])]),
            ),
            append(
                text,
                &root,
                root.get("b").unwrap(),
                Items::Members(&[("x", json!(1))]),
            ),
            append(
                text,
                &root,
                &root,
                Items::Members(&[("c", json!({"d": 3}))]),
            ),
        ];
        assert_eq!(
            apply(text, edits),
            "{\"a\":[1,[2]], \"b\":{\"x\":1},\"c\":{\"d\":3}}"
        );
    }

    #[test]
    fn removing_leaves_the_rest_as_if_never_added() {
        let text = "[\n  1,\n  2,\n  3,\n  4\n]";
        let root = parse(text).unwrap();
        let cases: [(&[bool], &str); 4] = [
            (&[false, true, true, true], "[\n  2,\n  3,\n  4\n]"),
            (&[true, true, false, false], "[\n  1,\n  2\n]"),
            (&[false, true, false, true], "[\n  2,\n  4\n]"),
            (&[false, false, false, false], "[]"),
        ];
        for (keep, want) in cases {
            assert_eq!(apply(text, remove(&root, keep)), want, "{keep:?}");
        }
        let text = "{\"a\": 1, \"b\": 2}";
        let root = parse(text).unwrap();
        assert_eq!(apply(text, remove(&root, &[true, false])), "{\"a\": 1}");
    }
}
