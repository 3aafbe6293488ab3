//! What every Redis client of gangway's shares: reading the keys under a
//! pattern, escaping text into a glob, reading the server's keyspace
//! notification flags, and `host:port` endpoints.

use ::redis::aio::MultiplexedConnection;

/// Keys asked for in one `MGET`, so that one answer stays small.
const MGET_BATCH: usize = 500;

/// Whether `notify-keyspace-events` flags announce every change to a
/// string key: keyspace events (`K`) of string commands (`$`) and generic
/// ones such as DEL and RENAME (`g`), or all of them (`A`).
pub fn notifies_changes(flags: &str) -> bool {
    flags.contains('K') && (flags.contains('A') || (flags.contains('g') && flags.contains('$')))
}

/// `host:port` or `[v6]:port`.
pub fn host_port(text: &str) -> Option<(String, u16)> {
    let (host, port) = text.rsplit_once(':')?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() {
        return None;
    }
    Some((host.to_owned(), port.parse().ok()?))
}

/// The keys matching `pattern`, each once (SCAN may repeat a key), with
/// their values read by MGET in batches; a value is None for a key gone
/// since the SCAN or holding no string.
pub async fn scan_values(
    connection: &mut MultiplexedConnection,
    pattern: &str,
) -> Result<Vec<(Vec<u8>, Option<Vec<u8>>)>, ::redis::RedisError> {
    let mut keys: Vec<Vec<u8>> = Vec::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, batch): (u64, Vec<Vec<u8>>) = ::redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(MGET_BATCH)
            .query_async(connection)
            .await?;
        keys.extend(batch);
        if next == 0 {
            break;
        }
        cursor = next;
    }
    keys.sort();
    keys.dedup();
    let mut read = Vec::with_capacity(keys.len());
    for batch in keys.chunks(MGET_BATCH) {
        let values: Vec<Option<Vec<u8>>> = ::redis::cmd("MGET")
            .arg(batch)
            .query_async(connection)
            .await?;
        read.extend(batch.iter().cloned().zip(values));
    }
    Ok(read)
}

/// `text` with Redis glob characters escaped, for SCAN MATCH and
/// PSUBSCRIBE.
pub fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notifications_are_used_only_when_they_cover_string_keys() {
        assert!(notifies_changes("KA"));
        assert!(notifies_changes("AKE"));
        assert!(notifies_changes("Kg$"));
        assert!(!notifies_changes(""));
        assert!(!notifies_changes("EA"), "keyevent only");
        assert!(!notifies_changes("K$"), "no DEL");
    }

    #[test]
    fn endpoints_and_globs() {
        assert_eq!(
            host_port("127.0.0.1:6379"),
            Some(("127.0.0.1".into(), 6379))
        );
        assert_eq!(host_port("[::1]:6380"), Some(("::1".into(), 6380)));
        assert_eq!(host_port("redis"), None);
        assert_eq!(host_port(":6379"), None);
        assert_eq!(glob_escape("a*b/[x]"), "a\\*b/\\[x\\]");
    }
}
