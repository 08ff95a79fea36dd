//! Params decoded straight from a request's JSON into their typed struct, with errors that
//! name the param. serde_json's own errors for a `Value` say "invalid type: integer `5`,
//! expected a string" and not which param held it, so this deserializer walks the params
//! object itself: each error knows the param it came from and the value given there, and
//! reads `"direction" must be right or down, got 5`.
//!
//! Invariants: a null param reads as an absent one; params a struct does not name are
//! skipped unread; nothing here panics, whatever the value.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, Expected, IntoDeserializer, MapAccess, SeqAccess,
    Unexpected, Visitor,
};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{ApiError, Request};

/// Decodes `params` (an object) as those of `method`, a method in [`Request::METHODS`].
pub(super) fn request(method: &str, params: &Value) -> Result<Request, ApiError> {
    // What this method has always answered for a wrong param; scripts may match on it.
    let code = match method {
        "server.live_handoff" => "bad_params",
        _ => "invalid_params",
    };
    Request::deserialize(Envelope { method, params })
        .map_err(|e| ApiError::new(code, e.message(method, params)))
}

/// What went wrong decoding params.
#[derive(Debug)]
struct DecodeError {
    /// The param it happened in.
    param: Option<String>,
    /// The value given for that param, as JSON.
    got: Option<String>,
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    /// Of the wrong type, or out of range: what the param must be.
    Mismatch(String),
    /// A required param absent (or null).
    Missing(&'static str),
    Other(String),
}

impl DecodeError {
    fn new(kind: Kind) -> DecodeError {
        DecodeError {
            param: None,
            got: None,
            kind,
        }
    }

    /// The error as it happened in `param`, given `value` (unless deeper down named one).
    fn in_param(mut self, param: &str, value: &Value) -> DecodeError {
        if self.param.is_none() && !matches!(self.kind, Kind::Missing(_)) {
            self.param = Some(param.to_string());
            self.got = Some(value.to_string());
        }
        self
    }

    /// The sentence for people; a missing param says what it takes, learnt from its type.
    fn message(self, method: &str, params: &Value) -> String {
        match self.kind {
            Kind::Missing(name) => match what_it_takes(method, params, name) {
                Some(what) => format!("missing \"{name}\" ({what})"),
                None => format!("missing \"{name}\""),
            },
            _ => self.to_string(),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let param = self.param.as_deref().unwrap_or("params");
        match &self.kind {
            Kind::Mismatch(what) => match &self.got {
                Some(got) => write!(f, "\"{param}\" must be {what}, got {got}"),
                None => write!(f, "\"{param}\" must be {what}"),
            },
            Kind::Missing(name) => write!(f, "missing \"{name}\""),
            Kind::Other(message) => write!(f, "\"{param}\": {message}"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl de::Error for DecodeError {
    fn custom<T: fmt::Display>(message: T) -> DecodeError {
        DecodeError::new(Kind::Other(message.to_string()))
    }

    fn invalid_type(_: Unexpected<'_>, expected: &dyn Expected) -> DecodeError {
        DecodeError::new(Kind::Mismatch(plain(expected)))
    }

    fn invalid_value(_: Unexpected<'_>, expected: &dyn Expected) -> DecodeError {
        DecodeError::new(Kind::Mismatch(plain(expected)))
    }

    fn unknown_variant(_: &str, words: &'static [&'static str]) -> DecodeError {
        DecodeError::new(Kind::Mismatch(one_of(words)))
    }

    fn missing_field(name: &'static str) -> DecodeError {
        DecodeError::new(Kind::Missing(name))
    }
}

/// What serde's visitors of plain types expect, in the words of docs/api.md.
fn plain(expected: &dyn Expected) -> String {
    let text = expected.to_string();
    match text.as_str() {
        "u8" | "u16" | "u32" | "u64" | "usize" => "a non-negative integer".into(),
        "a boolean" => "true or false".into(),
        "path string" => "a path".into(),
        _ => text,
    }
}

/// `right or down`, `left, right, up or down`.
fn one_of(words: &[&str]) -> String {
    match words {
        [] => "nothing".into(),
        [one] => (*one).into(),
        [rest @ .., last] => format!("{} or {last}", rest.join(", ")),
    }
}

/// What the required param `name` takes: the request decoded again with that param given
/// a value that no param's type accepts (an empty object) says what it expected instead.
fn what_it_takes(method: &str, params: &Value, name: &str) -> Option<String> {
    let mut probe = params.clone();
    probe
        .as_object_mut()?
        .insert(name.to_string(), Value::Object(Map::new()));
    match Request::deserialize(Envelope {
        method,
        params: &probe,
    }) {
        Err(DecodeError {
            param: Some(param),
            kind: Kind::Mismatch(what),
            ..
        }) if param == name => Some(what),
        _ => None,
    }
}

/// A request as serde's derive for [`Request`] reads it: its method, then its params.
struct Envelope<'a> {
    method: &'a str,
    params: &'a Value,
}

impl<'de> Deserializer<'de> for Envelope<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_map(EnvelopeEntries {
            envelope: self,
            next: 0,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map struct
        enum identifier ignored_any
    }
}

struct EnvelopeEntries<'a> {
    envelope: Envelope<'a>,
    /// 0: the method comes next, 1: the params, then nothing.
    next: u8,
}

impl<'de> MapAccess<'de> for EnvelopeEntries<'de> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        let key = match self.next {
            0 => "method",
            1 => "params",
            _ => return Ok(None),
        };
        seed.deserialize(key.into_deserializer()).map(Some)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<T::Value, DecodeError> {
        self.next += 1;
        match self.next {
            1 => seed.deserialize(self.envelope.method.into_deserializer()),
            _ => seed.deserialize(Param(self.envelope.params)),
        }
    }
}

/// One JSON value being decoded as a param (or a part of one).
struct Param<'a>(&'a Value);

impl<'de> Deserializer<'de> for Param<'de> {
    type Error = DecodeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => visitor.visit_u64(u),
                (None, Some(i), _) => visitor.visit_i64(i),
                (None, None, Some(f)) => visitor.visit_f64(f),
                (None, None, None) => visitor.visit_unit(),
            },
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(Items(items.iter())),
            Value::Object(entries) => visitor.visit_map(Entries {
                entries: entries.iter(),
                value: None,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    /// Only words (unit variants: `"right"`) are enums in params.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        words: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        match self.0 {
            Value::String(s) => visitor.visit_enum(s.as_str().into_deserializer()),
            _ => Err(DecodeError::new(Kind::Mismatch(one_of(words)))),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DecodeError> {
        visitor.visit_newtype_struct(self)
    }

    /// A param nobody reads is not looked into.
    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DecodeError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

/// The entries of an object, nulls left out; an error in one names its key.
struct Entries<'a> {
    entries: serde_json::map::Iter<'a>,
    /// The entry whose key was read last, its value still to read.
    value: Option<(&'a str, &'a Value)>,
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = DecodeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DecodeError> {
        for (key, value) in self.entries.by_ref() {
            if value.is_null() {
                continue;
            }
            self.value = Some((key, value));
            return seed.deserialize(key.as_str().into_deserializer()).map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<T::Value, DecodeError> {
        let Some((key, value)) = self.value.take() else {
            return Err(de::Error::custom("a value was read before its key"));
        };
        seed.deserialize(Param(value))
            .map_err(|e| e.in_param(key, value))
    }
}

/// The items of an array.
struct Items<'a>(std::slice::Iter<'a, Value>);

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = DecodeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DecodeError> {
        self.0
            .next()
            .map(|v| seed.deserialize(Param(v)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}
