//! Values that params of several methods share: the public ids scripts type (`w1`, `t2`,
//! `p3`; also `"3"` or `3`, and sent as `"p3"`) and lists of strings.
//!
//! Invariant: an id is parsed here, once, into the model's public number; a text that is
//! no such id is an error naming what it should look like, never a panic.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, SeqAccess, Unexpected, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::model::ids::{PaneNo, TabNo, WorkspaceNo};

/// Parses "p3", "P3" or "3" for the given prefix letter (spaces around are allowed).
pub fn parse_public(text: &str, prefix: char) -> Option<u32> {
    let text = text.trim();
    let digits = text
        .strip_prefix(prefix)
        .or_else(|| text.strip_prefix(prefix.to_ascii_uppercase()))
        .unwrap_or(text);
    digits.parse().ok()
}

/// A public number as params carry it.
pub trait PublicId: Sized + fmt::Display {
    /// The letter it is written with (`p` for `p3`).
    const PREFIX: char;
    /// What a param of it must be, for errors.
    const WHAT: &'static str;
    fn from_no(no: u32) -> Self;

    /// The id a user typed (`p3`, `P3`, `3`).
    fn parse(text: &str) -> Option<Self> {
        parse_public(text, Self::PREFIX).map(Self::from_no)
    }
}

/// Gives a public number its letter, and its wire form in both directions.
macro_rules! public_id {
    ($ty:ident, $prefix:literal, $what:literal) => {
        impl PublicId for $ty {
            const PREFIX: char = $prefix;
            const WHAT: &'static str = $what;
            fn from_no(no: u32) -> $ty {
                $ty(no)
            }
        }

        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                d.deserialize_any(IdVisitor(PhantomData))
            }
        }
    };
}

public_id!(WorkspaceNo, 'w', "a workspace id like w1");
public_id!(TabNo, 't', "a tab id like t2");
public_id!(PaneNo, 'p', "a pane id like p3");

struct IdVisitor<T>(PhantomData<T>);

impl<T: PublicId> Visitor<'_> for IdVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(T::WHAT)
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<T, E> {
        u32::try_from(n)
            .map(T::from_no)
            .map_err(|_| E::invalid_value(Unexpected::Unsigned(n), &self))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<T, E> {
        Err(E::invalid_value(Unexpected::Signed(n), &self))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        T::parse(text).ok_or_else(|| E::invalid_value(Unexpected::Str(text), &self))
    }
}

/// A list of strings (a command's argv, key names). Its own type so that a wrong one,
/// or a wrong item in it, is reported as "a list of strings" and not as serde's
/// "a sequence".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Strings(pub Vec<String>);

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Strings, D::Error> {
        d.deserialize_seq(StringsVisitor)
    }
}

struct StringsVisitor;

impl<'de> Visitor<'de> for StringsVisitor {
    type Value = Strings;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of strings")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Strings, A::Error> {
        let mut out = Vec::new();
        loop {
            match items.next_element::<String>() {
                Ok(Some(item)) => out.push(item),
                Ok(None) => return Ok(Strings(out)),
                Err(_) => return Err(de::Error::invalid_type(Unexpected::Seq, &self)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn public_ids_accept_prefixed_and_bare_forms() {
        assert_eq!(parse_public("p3", 'p'), Some(3));
        assert_eq!(parse_public("P3", 'p'), Some(3));
        assert_eq!(parse_public(" 3 ", 'p'), Some(3));
        assert_eq!(parse_public("t3", 'p'), None);
        let id = |v: serde_json::Value| serde_json::from_value::<PaneNo>(v).ok();
        assert_eq!(id(json!(3)), Some(PaneNo(3)));
        assert_eq!(id(json!("p3")), Some(PaneNo(3)));
        assert_eq!(id(json!(-1)), None);
        assert_eq!(id(json!([1])), None);
        assert_eq!(id(json!(u64::from(u32::MAX) + 1)), None);
        assert_eq!(serde_json::to_value(TabNo(2)).unwrap(), json!("t2"));
    }

    #[test]
    fn a_list_takes_strings_only() {
        let list = |v: serde_json::Value| serde_json::from_value::<Strings>(v).ok();
        assert_eq!(
            list(json!(["a", "b"])),
            Some(Strings(vec!["a".into(), "b".into()]))
        );
        assert_eq!(list(json!(["a", 1])), None);
        assert_eq!(list(json!("a")), None);
    }
}
