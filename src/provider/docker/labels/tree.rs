//! Labels as a tree of strings, and a serde `Deserializer` that reads the
//! dynamic model out of it the way Traefik reads labels: option names match
//! whatever their case, map keys stay as written, `a,b` fills a list, `[n]`
//! indexes a list of sections, and `x=true` enables a section with its
//! defaults.

use crate::config::dynamic::Middleware;
use serde::de::{self, DeserializeSeed, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use std::collections::BTreeMap;
use std::fmt;

/// Deepest key accepted, in segments; deeper keys are reported, not parsed.
pub(crate) const MAX_DEPTH: usize = 16;

/// One segment of a label key, with everything below it.
#[derive(Debug, Default)]
pub(crate) struct Node {
    /// The key of this node written out (`traefik.http.routers.web`), for messages.
    pub path: String,
    /// The label that set this node's value, as written.
    pub label: Option<String>,
    /// The label's value.
    pub value: Option<String>,
    /// Children by lower-cased segment, each with the segment as first written.
    pub children: BTreeMap<String, (String, Node)>,
}

impl Node {
    /// A root whose children's paths start with `path`.
    pub fn root(path: &str) -> Node {
        Node {
            path: path.to_owned(),
            ..Node::default()
        }
    }

    /// The child for `segment`, created when missing. Segments differing only
    /// in case are one child, spelt as the first label spelt it.
    pub fn child_mut(&mut self, segment: &str) -> &mut Node {
        let path = format!("{}.{segment}", self.path);
        &mut self
            .children
            .entry(segment.to_ascii_lowercase())
            .or_insert_with(|| {
                (
                    segment.to_owned(),
                    Node {
                        path,
                        ..Node::default()
                    },
                )
            })
            .1
    }

    /// What was read at and below this node, as written: a value, or a
    /// map of segments (a list when every segment is an index), for
    /// showing an object that does not read as what it is.
    pub fn as_json(&self) -> serde_json::Value {
        use serde_json::Value;
        if self.children.is_empty() {
            return self.value.clone().map_or(Value::Null, Value::String);
        }
        let mut indexed: Vec<(usize, Value)> = Vec::new();
        for (key, (_, child)) in &self.children {
            match key.parse::<usize>() {
                Ok(i) => indexed.push((i, child.as_json())),
                Err(_) => {
                    indexed.clear();
                    break;
                }
            }
        }
        if indexed.len() == self.children.len() {
            indexed.sort_by_key(|(i, _)| *i);
            return Value::Array(indexed.into_iter().map(|(_, v)| v).collect());
        }
        Value::Object(
            self.children
                .values()
                .map(|(written, child)| (written.clone(), child.as_json()))
                .collect(),
        )
    }

    /// The child for `segment`, whatever its case.
    pub fn child(&self, segment: &str) -> Option<&Node> {
        self.children
            .get(&segment.to_ascii_lowercase())
            .map(|(_, n)| n)
    }

    /// Removes and returns the child for `segment`, whatever its case.
    pub fn take_child(&mut self, segment: &str) -> Option<Node> {
        self.children
            .remove(&segment.to_ascii_lowercase())
            .map(|(_, n)| n)
    }

    /// Every label at or below this node, as written.
    pub fn labels(&self, out: &mut Vec<String>) {
        if let Some(l) = &self.label {
            out.push(l.clone());
        }
        for (_, child) in self.children.values() {
            child.labels(out);
        }
    }

    /// What to call this node in a message: its label, or the first label
    /// below it (a label the user wrote), or at worst its path.
    pub fn name(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
        }
        self.children
            .values()
            .next()
            .map(|(_, child)| child.name())
            .unwrap_or_else(|| self.path.clone())
    }

    /// Takes the label `label` out of the tree (its value, and its node
    /// and any parent left with nothing in it); whether it was there.
    pub fn prune(&mut self, label: &str) -> bool {
        if self.label.as_deref() == Some(label) {
            self.label = None;
            self.value = None;
            return true;
        }
        let Some(key) = self
            .children
            .iter_mut()
            .find_map(|(key, (_, child))| child.prune(label).then(|| key.clone()))
        else {
            return false;
        };
        if self
            .children
            .get(&key)
            .is_some_and(|(_, c)| c.label.is_none() && c.children.is_empty())
        {
            self.children.remove(&key);
        }
        true
    }

    /// Whether no label is left at or below this node.
    pub fn is_empty(&self) -> bool {
        self.label.is_none() && self.children.values().all(|(_, c)| c.is_empty())
    }

    fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }

    /// Children that are list items (`[0]`, `[1]`…), in index order; None
    /// when the children are not all list items.
    fn items(&self) -> Option<Vec<&Node>> {
        let mut items = Vec::with_capacity(self.children.len());
        for (key, (_, node)) in &self.children {
            let index: usize = key.strip_prefix('[')?.strip_suffix(']')?.parse().ok()?;
            items.push((index, node));
        }
        items.sort_by_key(|(i, _)| *i);
        Some(items.into_iter().map(|(_, n)| n).collect())
    }
}

/// A problem found while reading a tree, tied to a label when known.
#[derive(Debug)]
pub(crate) struct DeError {
    /// The label (or key path) the problem is about.
    pub label: Option<String>,
    /// What is wrong.
    pub message: String,
    /// For an unknown option: the option as written and the closest known one.
    pub unknown: Option<(String, Option<String>)>,
}

impl DeError {
    fn at(mut self, node: &Node) -> Self {
        if self.label.is_none() {
            self.label = Some(node.name());
        }
        self
    }

    fn new(node: &Node, message: impl Into<String>) -> Self {
        DeError {
            label: Some(node.name()),
            message: message.into(),
            unknown: None,
        }
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            label: None,
            message: msg.to_string(),
            unknown: None,
        }
    }
}

/// Reads `T` from a node.
pub(crate) fn read<'a, T: serde::Deserialize<'a>>(node: &'a Node) -> Result<T, DeError> {
    T::deserialize(NodeDe { node }).map_err(|e| e.at(node))
}

/// Reads a middleware. Its type is matched whatever its case, like every
/// option here; the model's own reading of a middleware (which keeps a bad
/// one with the reason) matches exact names only, so it is not used.
pub(crate) fn read_middleware(node: &Node) -> Result<Middleware, DeError> {
    if node.is_leaf() {
        return Err(DeError::new(
            node,
            "expects a middleware type below it (e.g. `stripprefix.prefixes`), not a value",
        ));
    }
    let mut m = Middleware::default();
    for (written, child) in node.children.values() {
        let Some(kind) = Middleware::KNOWN
            .iter()
            .find(|k| k.eq_ignore_ascii_case(written))
        else {
            return Err(unknown_option(child, written, Middleware::KNOWN));
        };
        if child.is_leaf() && child.value.as_deref().and_then(parse_bool) == Some(false) {
            continue;
        }
        m.read_kind(kind, NodeDe { node: child })
            .map_err(|e| e.at(child))?;
    }
    Ok(m)
}

/// The error for an option not among `fields`, with the closest one.
fn unknown_option(child: &Node, written: &str, fields: &[&str]) -> DeError {
    let suggestion = suggest(written, fields).map(str::to_ascii_lowercase);
    DeError {
        label: Some(child.name()),
        message: match &suggestion {
            Some(s) => format!("unknown option `{written}` (did you mean `{s}`?)"),
            None => format!(
                "unknown option `{written}` (known here: {})",
                fields
                    .iter()
                    .map(|f| f.to_ascii_lowercase())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
        unknown: Some((written.to_owned(), suggestion)),
    }
}

/// Options whose `false` means "absent" rather than an empty section, as in
/// Traefik (`tls=false`, `sticky.cookie=false`, `compress=false`).
fn is_section(field: &str) -> bool {
    const SECTIONS: &[&str] = &[
        "tls",
        "sticky",
        "cookie",
        "healthCheck",
        "ipStrategy",
        "sourceCriterion",
        "responseForwarding",
        "observability",
        "loadBalancer",
    ];
    SECTIONS.contains(&field) || Middleware::KNOWN.contains(&field)
}

/// Case-insensitive edit distance, for suggestions; bounded so hostile
/// input stays cheap.
pub(super) fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().flat_map(char::to_lowercase).collect();
    let b: Vec<char> = b.chars().flat_map(char::to_lowercase).collect();
    if a.len() > 64 || b.len() > 64 {
        return usize::MAX / 2;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            current[j + 1] = (previous[j] + usize::from(ca != cb))
                .min(previous[j + 1] + 1)
                .min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// The known name closest to `given`, if close enough to be a typo.
pub fn suggest<'a>(given: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (distance(given, k), *k))
        .filter(|(d, k)| *d <= 2.max(k.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "t" | "1" => Some(true),
        "false" | "f" | "0" => Some(false),
        _ => None,
    }
}

struct NodeDe<'a> {
    node: &'a Node,
}

impl<'a> NodeDe<'a> {
    fn value(&self) -> Result<&'a str, DeError> {
        match &self.node.value {
            Some(v) if self.node.is_leaf() => Ok(v.as_str()),
            _ => Err(DeError::new(
                self.node,
                "expects a value here, not further options",
            )),
        }
    }

    fn number<T: std::str::FromStr>(&self, what: &str) -> Result<T, DeError> {
        let text = self.value()?;
        text.trim()
            .parse()
            .map_err(|_| DeError::new(self.node, format!("`{text}` is not {what}")))
    }
}

macro_rules! numbers {
    ($($method:ident => $visit:ident : $ty:ty, $what:literal;)*) => {
        $(
            fn $method<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
                visitor.$visit(self.number::<$ty>($what)?)
            }
        )*
    };
}

impl<'a> de::Deserializer<'a> for NodeDe<'a> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        if self.node.is_leaf() {
            match &self.node.value {
                Some(v) => visitor.visit_borrowed_str(v),
                None => visitor.visit_unit(),
            }
        } else {
            visitor.visit_map(Entries::plain(self.node))
        }
    }

    fn deserialize_bool<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        let text = self.value()?;
        match parse_bool(text) {
            Some(b) => visitor.visit_bool(b),
            None => Err(DeError::new(
                self.node,
                format!("`{text}` is not true or false"),
            )),
        }
    }

    numbers! {
        deserialize_i8 => visit_i8: i8, "a whole number from -128 to 127";
        deserialize_i16 => visit_i16: i16, "a whole number (16 bits)";
        deserialize_i32 => visit_i32: i32, "a whole number (32 bits)";
        deserialize_i64 => visit_i64: i64, "a whole number";
        deserialize_u8 => visit_u8: u8, "a whole number from 0 to 255";
        deserialize_u16 => visit_u16: u16, "a whole number from 0 to 65535";
        deserialize_u32 => visit_u32: u32, "a whole number, 0 or more";
        deserialize_u64 => visit_u64: u64, "a whole number, 0 or more";
        deserialize_f32 => visit_f32: f32, "a number";
        deserialize_f64 => visit_f64: f64, "a number";
    }

    fn deserialize_char<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        let text = self.value()?;
        let mut chars = text.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => visitor.visit_char(c),
            _ => Err(DeError::new(
                self.node,
                format!("`{text}` is not one character"),
            )),
        }
    }

    fn deserialize_str<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_borrowed_str(self.value()?)
    }

    fn deserialize_string<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_borrowed_bytes(self.value()?.as_bytes())
    }

    fn deserialize_byte_buf<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        if self.node.is_leaf() {
            let text = self.value()?;
            // Traefik's lists are comma-separated, spaces around items ignored.
            let items: Vec<&'a str> = text
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            return visitor.visit_seq(Items {
                parent: self.node,
                texts: items.into_iter(),
                nodes: Vec::new().into_iter(),
            });
        }
        match self.node.items() {
            Some(nodes) => visitor.visit_seq(Items {
                parent: self.node,
                texts: Vec::new().into_iter(),
                nodes: nodes.into_iter(),
            }),
            None => Err(DeError::new(
                self.node,
                "expects a comma-separated list or indexed items (`[0]`)",
            )),
        }
    }

    fn deserialize_tuple<V: Visitor<'a>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        if self.node.is_leaf() {
            return Err(DeError::new(
                self.node,
                "expects named entries below it, not a value",
            ));
        }
        visitor.visit_map(Entries::plain(self.node))
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        if self.node.is_leaf() {
            // `tls=true`, `compress=true`: the section with its defaults.
            return match self.node.value.as_deref().map(parse_bool) {
                Some(Some(true)) | None => visitor.visit_map(Entries::empty(self.node)),
                _ => Err(DeError::new(
                    self.node,
                    format!(
                        "`{}` is not a value for this section: give its options (e.g. `{}.{}`) or `true`",
                        self.node.value.as_deref().unwrap_or_default(),
                        self.node.name(),
                        fields
                            .first()
                            .map(|f| f.to_ascii_lowercase())
                            .unwrap_or_default()
                    ),
                )),
            };
        }
        let mut entries = Vec::with_capacity(self.node.children.len());
        for (written, child) in self.node.children.values() {
            let Some(field) = fields.iter().find(|f| f.eq_ignore_ascii_case(written)) else {
                return Err(unknown_option(child, written, fields));
            };
            let disabled_section = child.is_leaf()
                && is_section(field)
                && child.value.as_deref().and_then(parse_bool) == Some(false);
            if !disabled_section {
                entries.push((*field, child));
            }
        }
        visitor.visit_map(Entries {
            parent: self.node,
            fields: entries.into_iter(),
            keys: Vec::new().into_iter(),
            pending: None,
        })
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let text = self.value()?;
        visitor.visit_enum(text.into_deserializer())
    }

    fn deserialize_identifier<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }
}

/// A map or struct's entries: struct fields under their canonical names, or
/// map keys as written.
struct Entries<'a> {
    parent: &'a Node,
    fields: std::vec::IntoIter<(&'static str, &'a Node)>,
    keys: std::vec::IntoIter<(&'a str, &'a Node)>,
    pending: Option<&'a Node>,
}

impl<'a> Entries<'a> {
    fn plain(node: &'a Node) -> Self {
        let keys: Vec<(&'a str, &'a Node)> = node
            .children
            .values()
            .map(|(k, n)| (k.as_str(), n))
            .collect();
        Entries {
            parent: node,
            fields: Vec::new().into_iter(),
            keys: keys.into_iter(),
            pending: None,
        }
    }

    fn empty(node: &'a Node) -> Self {
        Entries {
            parent: node,
            fields: Vec::new().into_iter(),
            keys: Vec::new().into_iter(),
            pending: None,
        }
    }
}

impl<'a> MapAccess<'a> for Entries<'a> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'a>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        if let Some((field, node)) = self.fields.next() {
            self.pending = Some(node);
            return seed
                .deserialize(field.into_deserializer())
                .map(Some)
                .map_err(|e: DeError| e.at(node));
        }
        if let Some((key, node)) = self.keys.next() {
            self.pending = Some(node);
            return seed
                .deserialize(de::value::BorrowedStrDeserializer::new(key))
                .map(Some)
                .map_err(|e: DeError| e.at(node));
        }
        Ok(None)
    }

    fn next_value_seed<S: DeserializeSeed<'a>>(&mut self, seed: S) -> Result<S::Value, DeError> {
        let node = self
            .pending
            .take()
            .ok_or_else(|| DeError::new(self.parent, "internal: value without key"))?;
        seed.deserialize(NodeDe { node }).map_err(|e| e.at(node))
    }
}

/// A list's items: texts split from one value, or indexed child nodes.
struct Items<'a> {
    parent: &'a Node,
    texts: std::vec::IntoIter<&'a str>,
    nodes: std::vec::IntoIter<&'a Node>,
}

impl<'a> SeqAccess<'a> for Items<'a> {
    type Error = DeError;

    fn next_element_seed<S: DeserializeSeed<'a>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, DeError> {
        if let Some(text) = self.texts.next() {
            return seed
                .deserialize(ItemDe { text })
                .map(Some)
                .map_err(|e| e.at(self.parent));
        }
        if let Some(node) = self.nodes.next() {
            return seed
                .deserialize(NodeDe { node })
                .map(Some)
                .map_err(|e| e.at(node));
        }
        Ok(None)
    }
}

/// One item of a comma-separated list: a plain string, numbers parsed.
struct ItemDe<'a> {
    text: &'a str,
}

impl<'a> ItemDe<'a> {
    fn number<T: std::str::FromStr>(&self) -> Result<T, DeError> {
        self.text
            .parse()
            .map_err(|_| de::Error::custom(format!("`{}` is not a number", self.text)))
    }
}

macro_rules! item_numbers {
    ($($method:ident => $visit:ident : $ty:ty;)*) => {
        $(
            fn $method<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
                visitor.$visit(self.number::<$ty>()?)
            }
        )*
    };
}

impl<'a> de::Deserializer<'a> for ItemDe<'a> {
    type Error = DeError;

    item_numbers! {
        deserialize_i8 => visit_i8: i8;
        deserialize_i16 => visit_i16: i16;
        deserialize_i32 => visit_i32: i32;
        deserialize_i64 => visit_i64: i64;
        deserialize_u8 => visit_u8: u8;
        deserialize_u16 => visit_u16: u16;
        deserialize_u32 => visit_u32: u32;
        deserialize_u64 => visit_u64: u64;
        deserialize_f32 => visit_f32: f32;
        deserialize_f64 => visit_f64: f64;
    }

    fn deserialize_any<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_borrowed_str(self.text)
    }

    fn deserialize_bool<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        match parse_bool(self.text) {
            Some(b) => visitor.visit_bool(b),
            None => Err(de::Error::custom(format!(
                "`{}` is not true or false",
                self.text
            ))),
        }
    }

    fn deserialize_option<V: Visitor<'a>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_enum(self.text.into_deserializer())
    }

    fn deserialize_struct<V: Visitor<'a>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, DeError> {
        Err(de::Error::custom(
            "list items with options are written with indexes: `name[0].option=…`",
        ))
    }

    serde::forward_to_deserialize_any! {
        <W: Visitor<'a>>
        char str string bytes byte_buf unit unit_struct seq tuple
        tuple_struct map identifier ignored_any
    }
}
