//! Fields of a streamed event, read as the wire format describes them and left out (not an error) when a
//! server sends another type, as `Value::get(..).and_then(Value::as_str)` did, but without building a
//! `Value` of every event: that, its map's hashing and freeing it were a quarter of the OpenAI session's work.
//! Hand-written visitors because serde's own `Option<T>` fails the whole event on a mistyped field.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A string, borrowed from the event where it has no escapes; `None` for any other type.
#[derive(Debug, Default)]
pub struct Text<'a>(pub Option<Cow<'a, str>>);

/// A non-negative integer; `None` for any other type.
#[derive(Debug, Default)]
pub struct Count(pub Option<u64>);

/// An object read as `T`; `None` for any other type.
#[derive(Debug)]
pub struct Obj<T>(pub Option<T>);

/// An array's elements; empty for any other type.
#[derive(Debug)]
pub struct List<T>(pub Vec<T>);

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None)
    }
}

impl<T> Default for List<T> {
    fn default() -> Self {
        List(Vec::new())
    }
}

impl<'a> Text<'a> {
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

/// The visitor methods for the JSON types a field does not take: each gives the empty value.
macro_rules! others_are_empty {
    ($($kind:ident)*) => { $(others_are_empty!(@ $kind);)* };
    (@ bool) => { fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> { Ok(Default::default()) } };
    (@ i64) => { fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> { Ok(Default::default()) } };
    (@ u64) => { fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> { Ok(Default::default()) } };
    (@ f64) => { fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> { Ok(Default::default()) } };
    (@ str) => { fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> { Ok(Default::default()) } };
    (@ unit) => { fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> { Ok(Default::default()) } };
    (@ seq) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
    (@ map) => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Owned(s.to_string()))))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                Ok(Text(Some(Cow::Owned(s))))
            }
            others_are_empty!(bool i64 u64 f64 unit seq map);
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<'de> Deserialize<'de> for Count {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Count;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
                Ok(Count(Some(n)))
            }
            others_are_empty!(bool i64 f64 str unit seq map);
        }
        d.deserialize_any(V)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(|t| Obj(Some(t)))
            }
            others_are_empty!(bool i64 u64 f64 str unit seq);
        }
        d.deserialize_any(V(PhantomData))
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for List<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = List<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(t) = seq.next_element()? {
                    out.push(t);
                }
                Ok(List(out))
            }
            others_are_empty!(bool i64 u64 f64 str unit map);
        }
        d.deserialize_any(V(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Ev<'a> {
        #[serde(borrow)]
        name: Text<'a>,
        n: Count,
        #[serde(borrow)]
        inner: Obj<Inner<'a>>,
        #[serde(borrow)]
        list: List<Obj<Inner<'a>>>,
    }

    #[derive(Deserialize, Default)]
    #[serde(default)]
    struct Inner<'a> {
        #[serde(borrow)]
        s: Text<'a>,
    }

    #[test]
    fn fields_of_the_expected_type_are_read() {
        let ev: Ev =
            serde_json::from_str(r#"{"name":"a","n":3,"inner":{"s":"x\ny"},"list":[{"s":"b"}],"extra":[1]}"#).unwrap();
        assert!(matches!(ev.name.0, Some(Cow::Borrowed("a"))));
        assert_eq!(ev.n.0, Some(3));
        assert_eq!(ev.inner.0.unwrap().s.as_str(), Some("x\ny"));
        assert_eq!(ev.list.0[0].0.as_ref().unwrap().s.as_str(), Some("b"));
    }

    #[test]
    fn mistyped_fields_are_left_out_not_errors() {
        let ev: Ev =
            serde_json::from_str(r#"{"name":{"a":[1,{"b":null}]},"n":-1.5,"inner":"no","list":{"s":"x"}}"#).unwrap();
        assert!(ev.name.0.is_none() && ev.n.0.is_none() && ev.inner.0.is_none() && ev.list.0.is_empty());
        let ev: Ev = serde_json::from_str(r#"{"name":null,"n":"7","inner":[1],"list":[3,"x",{"s":5}]}"#).unwrap();
        assert!(ev.name.0.is_none() && ev.n.0.is_none() && ev.inner.0.is_none());
        assert!(ev.list.0.len() == 3 && ev.list.0[2].0.as_ref().is_some_and(|i| i.s.0.is_none()));
        assert!(serde_json::from_str::<Ev>(r#"{"name":"#).is_err(), "broken JSON is still an error");
    }
}
