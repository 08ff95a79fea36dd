//! What the schema says, written out: the full commented default config
//! (`herdr config default`), and which keys differ between two configs (what a reload
//! changed). Both walk the schema, so a key added there is written and compared here
//! without more code.

use super::schema::{Field, Kind, ROOT_FIELDS};
use super::walk::join;
use super::{Config, KeySetting};

/// Comments are wrapped to this width.
const WIDTH: usize = 88;

/// The default config with a comment above every key (what it does, its range or
/// choices); loading it yields [`Config::default`]. `keys_body`: the lines written under
/// `[keys]` (the default bindings, commented, from the binding table, which lives above
/// this module).
pub fn default_text(keys_body: &str) -> String {
    let mut out = String::from(
        "# herdr's configuration: $XDG_CONFIG_HOME/herdr/config.toml (default\n\
         # ~/.config/herdr/config.toml). Every key is shown with its default value.\n\
         # `herdr config check` checks a file; `herdr server reload-config` (or the prefix,\n\
         # then R) applies it to a running server.\n",
    );
    section(&mut out, ROOT_FIELDS, "", &Config::default(), keys_body);
    out
}

/// Writes a section's own keys, then its subsections (TOML wants them in that order).
fn section(out: &mut String, fields: &[Field], prefix: &str, config: &Config, keys: &str) {
    for Field(name, kind, doc) in fields.iter().filter(|f| !is_section(&f.1)) {
        out.push('\n');
        comment(out, &with_range(doc, kind));
        let value = render(kind, config).unwrap_or_default();
        match kind {
            Kind::Program(_) => out.push_str(&format!("# {name} = {value}\n")),
            _ => out.push_str(&format!("{name} = {value}\n")),
        }
    }
    for Field(name, kind, doc) in fields.iter().filter(|f| is_section(&f.1)) {
        out.push('\n');
        comment(out, doc);
        out.push_str(&format!("[{}]\n", join(prefix, name)));
        match kind {
            Kind::Table(inner) => section(out, inner, &join(prefix, name), config, keys),
            _ => out.push_str(keys),
        }
    }
}

/// Keys written as a `[section]` of their own.
fn is_section(kind: &Kind) -> bool {
    matches!(kind, Kind::Table(_) | Kind::Bindings(_))
}

/// The doc, and the values the kind accepts where it says.
fn with_range(doc: &str, kind: &Kind) -> String {
    match kind {
        Kind::UInt { min, max, .. } => format!("{doc} From {min} to {max}."),
        Kind::Choice(words, _) => format!("{doc} One of: {}.", words.join(", ")),
        Kind::Words(words, _) => format!("{doc} Any of: {}.", words().join(", ")),
        Kind::Bool(_) => format!("{doc} True or false."),
        _ => doc.to_string(),
    }
}

/// `text` as `# ` lines of at most [`WIDTH`] columns.
fn comment(out: &mut String, text: &str) {
    let mut line = String::from("#");
    for word in text.split_whitespace() {
        if line.len() + 1 + word.len() > WIDTH && line.len() > 1 {
            out.push_str(&line);
            out.push('\n');
            line = String::from("#");
        }
        line.push(' ');
        line.push_str(word);
    }
    out.push_str(&line);
    out.push('\n');
}

/// A key's value in `config`, as TOML; `None` for a section.
fn render(kind: &Kind, config: &Config) -> Option<String> {
    let mut c = config.clone();
    let strings = |list: &[String]| {
        let items = list.iter().cloned().map(toml::Value::String).collect();
        toml::Value::Array(items).to_string()
    };
    Some(match kind {
        Kind::Table(_) => return None,
        Kind::Str(slot) | Kind::KeyName(slot) | Kind::Program(slot) | Kind::Choice(_, slot) => {
            toml::Value::String(slot(&mut c).clone()).to_string()
        }
        Kind::Bool(slot) => slot(&mut c).to_string(),
        Kind::UInt { get, .. } => get(&c).to_string(),
        Kind::Bindings(slot) => bindings(slot(&mut c)),
        Kind::StrList(slot) | Kind::Words(_, slot) | Kind::Argv(slot) => strings(slot(&mut c)),
    })
}

/// `[keys]` entries as one line (where they are in the file is no part of their value).
fn bindings(keys: &[KeySetting]) -> String {
    let pair = |k: &KeySetting| {
        let (key, action) = (
            toml::Value::String(k.key.clone()),
            toml::Value::String(k.action.clone()),
        );
        format!("{key} = {action}")
    };
    format!(
        "{{ {} }}",
        keys.iter().map(pair).collect::<Vec<_>>().join(", ")
    )
}

/// Every key whose value differs between `old` and `new`: its dotted name and its new
/// value as TOML, in schema order.
pub fn changes(old: &Config, new: &Config) -> Vec<(String, String)> {
    let mut out = Vec::new();
    diff(ROOT_FIELDS, "", old, new, &mut out);
    out
}

fn diff(
    fields: &[Field],
    prefix: &str,
    old: &Config,
    new: &Config,
    out: &mut Vec<(String, String)>,
) {
    for Field(name, kind, _) in fields {
        let key = join(prefix, name);
        match kind {
            Kind::Table(inner) => diff(inner, &key, old, new, out),
            _ => {
                let (before, after) = (render(kind, old), render(kind, new));
                if before != after {
                    out.push((key, after.unwrap_or_default()));
                }
            }
        }
    }
}

/// Every dotted key of the schema (sections included), for tests that hold other
/// tables to it.
#[cfg(test)]
pub(super) fn all_keys() -> Vec<String> {
    fn walk(fields: &[Field], prefix: &str, out: &mut Vec<String>) {
        for Field(name, kind, _) in fields {
            let key = join(prefix, name);
            out.push(key.clone());
            if let Kind::Table(inner) = kind {
                walk(inner, &key, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(ROOT_FIELDS, "", &mut out);
    out
}
