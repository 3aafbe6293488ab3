//! Errors rendered for logs and the API as one line: the error's message,
//! then each cause from `std::error::Error::source()`, joined by `: `.
//! Logging only the outer message loses the reason ("client error
//! (Connect)" without "connection refused"); logging with `{:?}` prints
//! type names and `Some(…)` instead of a sentence.

use std::error::Error;
use std::fmt;

/// Displays an error followed by its causes: `outer: cause: root cause`.
///
/// Many errors already end their own message with their source's (written
/// as `"…: {source}"`); a cause whose text the line so far already ends with
/// is not repeated.
pub struct WithCauses<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for WithCauses<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut line = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(c) = cause {
            let text = c.to_string();
            if !text.is_empty() && !line.ends_with(&text) {
                line.push_str(": ");
                line.push_str(&text);
            }
            cause = c.source();
        }
        f.write_str(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot reach the CA at {url}")]
    struct Outer {
        url: &'static str,
        source: Middle,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("tcp connect error: {source}")]
    struct Middle {
        source: io::Error,
    }

    #[test]
    fn causes_follow_the_message_once_each() {
        let e = Outer {
            url: "https://127.0.0.1:1/dir",
            source: Middle {
                source: io::Error::new(io::ErrorKind::ConnectionRefused, "connection refused"),
            },
        };
        assert_eq!(
            WithCauses(&e).to_string(),
            "cannot reach the CA at https://127.0.0.1:1/dir: tcp connect error: connection refused"
        );
    }

    #[test]
    fn an_error_without_causes_is_its_message() {
        let e = io::Error::other("disk full");
        assert_eq!(WithCauses(&e).to_string(), "disk full");
    }
}
