//! Reading a parsed document into the dynamic model the way Traefik reads
//! its file and key-value providers: option names match whatever their case
//! (`entrypoints`, `ForwardAuth`), a scalar of another kind is converted
//! when it reads as the wanted one (`"80"` for a number, `"true"` for a
//! flag, `80` for a string), and a string where a list is wanted is split
//! at commas, as a label would be. Map keys (object names, header names)
//! stay as written.

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};
use serde_json::{Map, Value};
use std::fmt;

#[cfg(test)]
mod tests;

/// Why a document did not read into the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LenientError {
    /// An option no field of the object has, in any case.
    #[error("unknown field `{field}`, expected {}", one_of(expected))]
    UnknownField {
        /// The option as written.
        field: String,
        /// The object's options.
        expected: &'static [&'static str],
    },
    /// A value none of the choices names, in any case.
    #[error("unknown variant `{variant}`, expected {}", one_of(expected))]
    UnknownVariant {
        /// The value as written.
        variant: String,
        /// The choices.
        expected: &'static [&'static str],
    },
    /// Anything else: a value of the wrong kind, a missing field, a value
    /// the type refuses.
    #[error("{0}")]
    Invalid(String),
}

fn one_of(names: &[&str]) -> String {
    match names {
        [] => "no fields".to_owned(),
        [one] => format!("`{one}`"),
        [first, second] => format!("`{first}` or `{second}`"),
        many => {
            let listed: Vec<String> = many.iter().map(|n| format!("`{n}`")).collect();
            format!("one of {}", listed.join(", "))
        }
    }
}

impl de::Error for LenientError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        LenientError::Invalid(msg.to_string())
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        LenientError::UnknownField {
            field: field.to_owned(),
            expected,
        }
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        LenientError::UnknownVariant {
            variant: variant.to_owned(),
            expected,
        }
    }
}

/// Reads `value` as a `T`, leniently (see the module's description).
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, LenientError> {
    T::deserialize(Lenient(value))
}

/// A parsed value read leniently.
#[derive(Debug)]
pub struct Lenient(pub Value);

impl Lenient {
    fn unexpected(&self) -> de::Unexpected<'_> {
        match &self.0 {
            Value::Null => de::Unexpected::Unit,
            Value::Bool(b) => de::Unexpected::Bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => de::Unexpected::Unsigned(u),
                (_, Some(i), _) => de::Unexpected::Signed(i),
                (_, _, Some(f)) => de::Unexpected::Float(f),
                _ => de::Unexpected::Other("number"),
            },
            Value::String(s) => de::Unexpected::Str(s),
            Value::Array(_) => de::Unexpected::Seq,
            Value::Object(_) => de::Unexpected::Map,
        }
    }

    fn invalid(&self, exp: &dyn de::Expected) -> LenientError {
        de::Error::invalid_type(self.unexpected(), exp)
    }

    /// The text of a scalar, numbers and flags written out.
    fn text(&self) -> Option<String> {
        match &self.0 {
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        }
    }
}

/// A number read from a number, or from a string that holds one.
macro_rules! number {
    ($method:ident, $visit:ident, $ty:ty) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
            let parsed: Option<$ty> = match &self.0 {
                Value::Number(n) => n.to_string().parse().ok(),
                Value::String(s) => s.trim().parse().ok(),
                _ => None,
            };
            match parsed {
                Some(n) => visitor.$visit(n),
                None => match &self.0 {
                    // A number out of the type's range keeps serde's message.
                    Value::Number(_) => de::Deserializer::deserialize_any(self, visitor),
                    _ => Err(self.invalid(&visitor)),
                },
            }
        }
    };
}

impl<'de> de::Deserializer<'de> for Lenient {
    type Error = LenientError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => {
                if let Some(u) = n.as_u64() {
                    visitor.visit_u64(u)
                } else if let Some(i) = n.as_i64() {
                    visitor.visit_i64(i)
                } else {
                    visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN))
                }
            }
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => visitor.visit_seq(Seq(items.into_iter())),
            Value::Object(map) => visitor.visit_map(Entries::new(map)),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
        match &self.0 {
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::String(s) if s.trim().eq_ignore_ascii_case("true") => visitor.visit_bool(true),
            Value::String(s) if s.trim().eq_ignore_ascii_case("false") => visitor.visit_bool(false),
            _ => Err(self.invalid(&visitor)),
        }
    }

    number!(deserialize_i8, visit_i8, i8);
    number!(deserialize_i16, visit_i16, i16);
    number!(deserialize_i32, visit_i32, i32);
    number!(deserialize_i64, visit_i64, i64);
    number!(deserialize_i128, visit_i128, i128);
    number!(deserialize_u8, visit_u8, u8);
    number!(deserialize_u16, visit_u16, u16);
    number!(deserialize_u32, visit_u32, u32);
    number!(deserialize_u64, visit_u64, u64);
    number!(deserialize_u128, visit_u128, u128);
    number!(deserialize_f32, visit_f32, f32);
    number!(deserialize_f64, visit_f64, f64);

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
        match self.text() {
            Some(text) => visitor.visit_string(text),
            None => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, LenientError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, LenientError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
        match self.0 {
            Value::Array(items) => visitor.visit_seq(Seq(items.into_iter())),
            // A list written as one string, `a,b`, as labels write lists.
            Value::String(s) => {
                let items: Vec<Value> = s
                    .split(',')
                    .map(str::trim)
                    .filter(|item| !item.is_empty())
                    .map(|item| Value::String(item.to_owned()))
                    .collect();
                visitor.visit_seq(Seq(items.into_iter()))
            }
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, LenientError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, LenientError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
        match self.0 {
            Value::Object(map) => visitor.visit_map(Entries::new(map)),
            _ => Err(self.invalid(&visitor)),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, LenientError> {
        let map = match self.0 {
            Value::Object(map) => map,
            other => return Err(Lenient(other).invalid(&visitor)),
        };
        // An option spelt in another case is the field of that name; one
        // written twice in two cases keeps the last, as Traefik does.
        let mut named = Map::new();
        for (key, value) in map {
            let key = match fields.iter().find(|f| f.eq_ignore_ascii_case(&key)) {
                Some(field) => (*field).to_owned(),
                None => key,
            };
            named.insert(key, value);
        }
        visitor.visit_map(Entries::new(named))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, LenientError> {
        let spelt = |given: String| match variants.iter().find(|v| v.eq_ignore_ascii_case(&given)) {
            Some(v) => (*v).to_owned(),
            None => given,
        };
        match self.0 {
            Value::String(s) => visitor.visit_enum(spelt(s).into_deserializer()),
            Value::Object(map) if map.len() == 1 => {
                let Some((variant, value)) = map.into_iter().next() else {
                    return Err(LenientError::Invalid("an empty table".to_owned()));
                };
                visitor.visit_enum(Variant {
                    name: spelt(variant),
                    value: Lenient(value),
                })
            }
            other => Err(Lenient(other).invalid(&visitor)),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, LenientError> {
        self.deserialize_string(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> Result<V::Value, LenientError> {
        visitor.visit_unit()
    }
}

impl IntoDeserializer<'_, LenientError> for Lenient {
    type Deserializer = Lenient;

    fn into_deserializer(self) -> Lenient {
        self
    }
}

struct Seq(std::vec::IntoIter<Value>);

impl<'de> de::SeqAccess<'de> for Seq {
    type Error = LenientError;

    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, LenientError> {
        match self.0.next() {
            Some(value) => seed.deserialize(Lenient(value)).map(Some),
            None => Ok(None),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Entries {
    entries: serde_json::map::IntoIter,
    value: Option<Value>,
}

impl Entries {
    fn new(map: Map<String, Value>) -> Entries {
        Entries {
            entries: map.into_iter(),
            value: None,
        }
    }
}

impl<'de> de::MapAccess<'de> for Entries {
    type Error = LenientError;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, LenientError> {
        match self.entries.next() {
            Some((key, value)) => {
                self.value = Some(value);
                seed.deserialize(Lenient(Value::String(key))).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<T::Value, LenientError> {
        let value = self.value.take().unwrap_or(Value::Null);
        seed.deserialize(Lenient(value))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

struct Variant {
    name: String,
    value: Lenient,
}

impl<'de> de::EnumAccess<'de> for Variant {
    type Error = LenientError;
    type Variant = Lenient;

    fn variant_seed<S: de::DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Lenient), LenientError> {
        let name = seed.deserialize(Lenient(Value::String(self.name)))?;
        Ok((name, self.value))
    }
}

impl<'de> de::VariantAccess<'de> for Lenient {
    type Error = LenientError;

    fn unit_variant(self) -> Result<(), LenientError> {
        match self.0 {
            Value::Null => Ok(()),
            other => Err(Lenient(other).invalid(&"a variant without options")),
        }
    }

    fn newtype_variant_seed<T: de::DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, LenientError> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, LenientError> {
        de::Deserializer::deserialize_seq(self, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, LenientError> {
        de::Deserializer::deserialize_struct(self, "", fields, visitor)
    }
}
