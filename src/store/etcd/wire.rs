//! The JSON shapes of etcd's gateway: protobuf's JSON mapping, where bytes
//! are base64, 64-bit integers are strings, and fields holding their zero
//! value (an empty value, a PUT event's type, `more: false`) are left out.

use base64::Engine as _;
use serde::{Deserialize, Deserializer};

/// Base64 as etcd writes it (standard alphabet, padded).
pub(crate) fn encode(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The end of the range that holds exactly the keys starting with `prefix`:
/// the prefix with its last byte that is not 0xff incremented and what
/// follows dropped. A prefix of only 0xff bytes (or none) has no such end;
/// etcd's `\0` then means "every key from `key` on".
pub(crate) fn prefix_end(prefix: &[u8]) -> Vec<u8> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

/// Bytes in a JSON answer (base64 text).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct B64(pub(super) Vec<u8>);

impl<'de> Deserialize<'de> for B64 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(text.as_bytes())
            .map(B64)
            .map_err(|e| serde::de::Error::custom(format!("`{text}` is not base64: {e}")))
    }
}

/// A 64-bit integer, which the gateway writes as a string (`"42"`); a
/// plain number is taken too.
pub(super) fn int64<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        Number(i64),
        Text(String),
    }
    match Either::deserialize(d)? {
        Either::Number(n) => Ok(n),
        Either::Text(t) => t
            .parse()
            .map_err(|_| serde::de::Error::custom(format!("`{t}` is not an integer"))),
    }
}

/// The header every answer carries.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Header {
    /// The store's revision when the answer was made.
    #[serde(default, deserialize_with = "int64")]
    pub(super) revision: i64,
}

/// One key and its value.
#[derive(Debug, Deserialize)]
pub(super) struct KeyValue {
    pub(super) key: B64,
    /// Left out when empty.
    #[serde(default)]
    pub(super) value: B64,
    #[serde(default, deserialize_with = "int64")]
    pub(super) mod_revision: i64,
}

/// `/v3/kv/range`'s answer.
#[derive(Debug, Deserialize)]
pub(super) struct RangeResponse {
    #[serde(default)]
    pub(super) header: Header,
    #[serde(default)]
    pub(super) kvs: Vec<KeyValue>,
    /// More keys lie in the range than the `limit` let through.
    #[serde(default)]
    pub(super) more: bool,
}

/// `/v3/auth/authenticate`'s answer.
#[derive(Debug, Deserialize)]
pub(super) struct AuthenticateResponse {
    pub(super) token: String,
}

/// An error answer: `{"error": …, "message": …, "code": <gRPC code>}`.
#[derive(Debug, Deserialize)]
pub(super) struct ErrorBody {
    #[serde(default)]
    pub(super) message: String,
    #[serde(default)]
    pub(super) error: String,
    #[serde(default)]
    pub(super) code: Option<i64>,
}

/// One line of `/v3/watch`'s stream.
#[derive(Debug, Deserialize)]
pub(super) struct WatchLine {
    pub(super) result: Option<WatchResponse>,
    pub(super) error: Option<ErrorBody>,
}

/// A watch message: created, canceled, or a batch of events.
#[derive(Debug, Deserialize)]
pub(super) struct WatchResponse {
    #[serde(default)]
    pub(super) header: Header,
    #[serde(default)]
    pub(super) created: bool,
    #[serde(default)]
    pub(super) canceled: bool,
    #[serde(default, deserialize_with = "int64")]
    pub(super) compact_revision: i64,
    #[serde(default)]
    pub(super) cancel_reason: String,
    #[serde(default)]
    pub(super) events: Vec<Event>,
}

/// One change.
#[derive(Debug, Deserialize)]
pub(super) struct Event {
    /// Left out for PUT, protobuf's zero value.
    #[serde(default, rename = "type")]
    pub(super) kind: EventType,
    pub(super) kv: KeyValue,
}

/// What happened to a key.
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
pub(super) enum EventType {
    #[default]
    #[serde(rename = "PUT")]
    Put,
    #[serde(rename = "DELETE")]
    Delete,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_ends_where_its_last_byte_is_incremented() {
        assert_eq!(prefix_end(b"traefik/"), b"traefik0");
        assert_eq!(prefix_end(b"a\xff"), b"b");
        assert_eq!(prefix_end(b"\xff\xff"), b"\0");
        assert_eq!(prefix_end(b""), b"\0");
    }

    #[test]
    fn watch_lines_read_as_etcd_34_writes_them() {
        // Seen from etcd 3.4.23: a PUT has no type, a DELETE's kv no value.
        let line = br#"{"result":{"header":{"cluster_id":"1","member_id":"2","revision":"5","raft_term":"2"},"events":[{"kv":{"key":"dHJhZWZpay9j","create_revision":"4","mod_revision":"4","version":"1","value":"Mw=="}},{"type":"DELETE","kv":{"key":"dHJhZWZpay9h","mod_revision":"5"}}]}}"#;
        let got: WatchLine = serde_json::from_slice(line).unwrap();
        let result = got.result.unwrap();
        assert_eq!(result.header.revision, 5);
        assert_eq!(result.events.len(), 2);
        assert_eq!(result.events[0].kind, EventType::Put);
        assert_eq!(result.events[0].kv.key.0, b"traefik/c");
        assert_eq!(result.events[0].kv.value.0, b"3");
        assert_eq!(result.events[1].kind, EventType::Delete);
        assert_eq!(result.events[1].kv.value.0, b"");
        assert_eq!(result.events[1].kv.mod_revision, 5);

        let compacted =
            br#"{"result":{"header":{"raft_term":"2"},"canceled":true,"compact_revision":"5"}}"#;
        let got: WatchLine = serde_json::from_slice(compacted).unwrap();
        let result = got.result.unwrap();
        assert!(result.canceled);
        assert_eq!(result.compact_revision, 5);
    }

    #[test]
    fn bad_base64_and_bad_integers_are_errors() {
        assert!(serde_json::from_str::<KeyValue>(r#"{"key":"!!"}"#).is_err());
        assert!(serde_json::from_str::<Header>(r#"{"revision":"x"}"#).is_err());
        assert_eq!(
            serde_json::from_str::<Header>(r#"{"revision":7}"#)
                .unwrap()
                .revision,
            7
        );
    }
}
