//! Applying a parsed document to a [`Config`] by the schema, collecting a [`Diagnostic`]
//! for every key that is unknown or wrong (the default stays for it) and the line of
//! every key that is known (for checks made after parsing, such as the shell's).

use std::collections::BTreeMap;
use std::path::Path;

use toml::de::{DeString, DeTable, DeValue};
use toml::Spanned;

use super::schema::{Field, Kind};
use super::{Config, Diagnostic, KeySetting};
use crate::suggest::did_you_mean;

/// Applies a parsed document to `config`, collecting diagnostics. Because each
/// key can appear only once in valid TOML, a field still holds its default
/// when we report a problem with it, so the message can quote that default.
pub(super) struct Walker<'a> {
    pub text: &'a str,
    pub path: &'a Path,
    pub config: Config,
    pub diags: Vec<Diagnostic>,
    /// The line of each known key, by dotted name.
    pub lines: BTreeMap<String, usize>,
}

impl Walker<'_> {
    fn table(&mut self, fields: &[Field], table: &DeTable<'_>, prefix: &str) {
        for (key, value) in in_file_order(table) {
            let dotted = join(prefix, key.get_ref());
            let line = line_of(self.text, key.span().start);
            match fields.iter().find(|f| f.0 == key.get_ref().as_ref()) {
                Some(field) => {
                    self.lines.insert(dotted.clone(), line);
                    self.value(&field.1, &dotted, line, value.get_ref());
                }
                None => {
                    let known: Vec<&str> = fields.iter().map(|f| f.0).collect();
                    let message = format!(
                        "unknown key{}; known keys are {}",
                        did_you_mean(key.get_ref(), &known),
                        known.join(", ")
                    );
                    self.report(&dotted, line, message);
                }
            }
        }
    }

    pub(super) fn value(&mut self, kind: &Kind, key: &str, line: usize, value: &DeValue<'_>) {
        match (kind, value) {
            (Kind::Table(fields), DeValue::Table(t)) => self.table(fields, t, key),
            (Kind::Table(_), v) => self.wrong(key, line, "a table", v, "using its defaults"),
            (Kind::Str(slot) | Kind::Program(slot), DeValue::String(s)) if !s.is_empty() => {
                *slot(&mut self.config) = s.to_string();
            }
            (Kind::KeyName(slot), v) => self.key_name(key, line, *slot, v),
            (Kind::Choice(words, slot), DeValue::String(s)) if words.contains(&s.as_ref()) => {
                *slot(&mut self.config) = s.to_string();
            }
            (Kind::Choice(words, slot), v) => {
                let default = format!("using the default {:?}", slot(&mut self.config));
                let want = format!("one of {}", words.join(", "));
                self.wrong(key, line, &want, v, &default);
            }
            (Kind::Str(slot) | Kind::Program(slot), v) => {
                let default = format!("using the default {:?}", slot(&mut self.config));
                self.wrong(key, line, "a non-empty string", v, &default);
            }
            (Kind::Bool(slot), DeValue::Boolean(b)) => *slot(&mut self.config) = *b,
            (Kind::Bool(slot), v) => {
                let default = format!("using the default {}", slot(&mut self.config));
                self.wrong(key, line, "true or false", v, &default);
            }
            (Kind::UInt { min, max, get, set }, v) => {
                // Parse as i128 so negative and huge literals are "out of
                // range" rather than a confusing type error.
                let parsed = match v {
                    DeValue::Integer(i) => i128::from_str_radix(i.as_str(), i.radix()).ok(),
                    _ => None,
                };
                match parsed.and_then(|n| u64::try_from(n).ok()) {
                    Some(n) if (*min..=*max).contains(&n) => set(&mut self.config, n),
                    _ => {
                        let expected = format!("an integer between {min} and {max}");
                        let default = format!("using the default {}", get(&self.config));
                        self.wrong(key, line, &expected, v, &default);
                    }
                }
            }
            (Kind::Bindings(slot), DeValue::Table(t)) => {
                for (k, v) in in_file_order(t) {
                    let line = line_of(self.text, k.span().start);
                    match v.get_ref() {
                        DeValue::String(action) => slot(&mut self.config).push(KeySetting {
                            key: k.get_ref().to_string(),
                            action: action.to_string(),
                            line,
                        }),
                        other => {
                            let (key, what) = (join(key, k.get_ref()), "an action name string");
                            self.wrong(&key, line, what, other, "ignoring this binding");
                        }
                    }
                }
            }
            (Kind::Bindings(_), v) => {
                let what = "a table of key = \"action\" bindings";
                self.wrong(key, line, what, v, "using the default bindings");
            }
            (Kind::StrList(slot), DeValue::Array(items)) => {
                let mut list = Vec::new();
                for item in items.iter() {
                    match item.get_ref() {
                        DeValue::String(s) if !s.trim().is_empty() => {
                            list.push(s.trim().to_string())
                        }
                        other => {
                            self.wrong(
                                key,
                                line,
                                "non-empty strings",
                                other,
                                "ignoring this entry",
                            );
                        }
                    }
                }
                *slot(&mut self.config) = list;
            }
            (Kind::StrList(_), v) => {
                self.wrong(key, line, "a list of strings", v, "using an empty list")
            }
            (Kind::Words(allowed, slot), v) => self.words(key, line, &allowed(), *slot, v),
            (Kind::Argv(slot), v) => self.argv(key, line, *slot, v),
        }
    }

    /// A key in tmux notation, as the key parser reads it.
    fn key_name(
        &mut self,
        key: &str,
        line: usize,
        slot: fn(&mut Config) -> &mut String,
        value: &DeValue<'_>,
    ) {
        let default = format!("using the default {:?}", slot(&mut self.config));
        match value {
            DeValue::String(s) if !s.is_empty() => match crate::input::keys::Key::parse(s) {
                Ok(_) => *slot(&mut self.config) = s.to_string(),
                Err(e) => self.report(key, line, format!("{e}; {default}")),
            },
            v => self.wrong(
                key,
                line,
                "a non-empty string (a key such as \"C-a\")",
                v,
                &default,
            ),
        }
    }

    /// A list of allowed words: each entry that is not one is reported (naming the
    /// allowed ones) and left out; what is not a list keeps the default.
    fn words(
        &mut self,
        key: &str,
        line: usize,
        allowed: &[&str],
        slot: fn(&mut Config) -> &mut Vec<String>,
        value: &DeValue<'_>,
    ) {
        let want = format!("a list of {}", allowed.join(", "));
        let DeValue::Array(items) = value else {
            let default = format!("using the default {:?}", slot(&mut self.config));
            return self.wrong(key, line, &want, value, &default);
        };
        let mut list = Vec::new();
        for item in items.iter() {
            match item.get_ref() {
                DeValue::String(s) if allowed.contains(&s.as_ref()) => list.push(s.to_string()),
                other => {
                    let want = format!("one of {}", allowed.join(", "));
                    self.wrong(key, line, &want, other, "ignoring this entry");
                }
            }
        }
        *slot(&mut self.config) = list;
    }

    /// A command line, taken whole or not at all (a command missing an argument could do
    /// something else than meant).
    fn argv(
        &mut self,
        key: &str,
        line: usize,
        slot: fn(&mut Config) -> &mut Vec<String>,
        value: &DeValue<'_>,
    ) {
        let want = "a list of strings, the program first (e.g. [\"notify-send\", \"herdr\"])";
        let strings: Option<Vec<String>> = match value {
            DeValue::Array(items) => items
                .iter()
                .map(|i| match i.get_ref() {
                    DeValue::String(s) => Some(s.to_string()),
                    _ => None,
                })
                .collect(),
            _ => None,
        };
        match strings {
            Some(argv) if argv.first().is_none_or(|p| !p.trim().is_empty()) => {
                *slot(&mut self.config) = argv;
            }
            _ => self.wrong(key, line, want, value, "running no command"),
        }
    }

    fn wrong(
        &mut self,
        key: &str,
        line: usize,
        expected: &str,
        found: &DeValue<'_>,
        fallback: &str,
    ) {
        let message = format!("expected {expected}, found {}; {fallback}", describe(found));
        self.report(key, line, message);
    }

    fn report(&mut self, key: &str, line: usize, message: String) {
        let diag = Diagnostic::new(self.path, Some(line), Some(key), message);
        self.diags.push(diag);
    }
}

type Entry<'t, 'i> = (&'t Spanned<DeString<'i>>, &'t Spanned<DeValue<'i>>);

/// Without toml's `preserve_order` feature tables iterate alphabetically;
/// sorting by span restores file order for bindings and diagnostics.
fn in_file_order<'t, 'i>(table: &'t DeTable<'i>) -> Vec<Entry<'t, 'i>> {
    let mut entries: Vec<Entry<'t, 'i>> = table.iter().collect();
    entries.sort_by_key(|(k, _)| k.span().start);
    entries
}

pub(super) fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

/// 1-based line containing byte `offset`; counts bytes so an offset that is
/// out of range or inside a character cannot panic.
pub(super) fn line_of(text: &str, offset: usize) -> usize {
    let newlines = text.bytes().take(offset).filter(|&b| b == b'\n').count();
    newlines + 1
}

/// Shows the offending value the way the user wrote it, where that is short.
fn describe(value: &DeValue<'_>) -> String {
    match value {
        DeValue::String(s) => format!("{s:?}"),
        DeValue::Integer(i) => i.to_string(),
        DeValue::Float(f) => f.to_string(),
        DeValue::Boolean(b) => b.to_string(),
        DeValue::Datetime(d) => d.to_string(),
        DeValue::Array(_) => "an array".to_string(),
        DeValue::Table(_) => "a table".to_string(),
    }
}
