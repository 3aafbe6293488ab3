//! Splits rule text into tokens, one at a time, tracking character columns.

use std::fmt;

use super::RuleError;

/// What a token is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TokKind<'a> {
    /// A run of ASCII letters, digits and `_`: a matcher name, or an
    /// unquoted argument written by mistake.
    Word(&'a str),
    /// A quoted string, with escapes already resolved.
    Str(String),
    LParen,
    RParen,
    Comma,
    And,
    Or,
    Not,
    /// A character that starts no token; the parser reports it in context.
    Other(char),
    Eof,
}

/// A token and the 1-based character column where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Token<'a> {
    pub kind: TokKind<'a>,
    pub col: usize,
}

/// Produces tokens on demand, so that errors come out in reading order.
pub(super) struct Lexer<'a> {
    rest: &'a str,
    /// The column of the first character of `rest`.
    col: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Self {
        Lexer { rest: text, col: 1 }
    }

    fn peek_char(&self) -> Option<char> {
        self.rest.chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let mut chars = self.rest.chars();
        let c = chars.next()?;
        self.rest = chars.as_str();
        self.col += 1;
        Some(c)
    }

    /// The next token; errors only for malformed strings.
    pub fn next_token(&mut self) -> Result<Token<'a>, RuleError> {
        while self.peek_char().is_some_and(char::is_whitespace) {
            self.bump();
        }
        let col = self.col;
        let Some(c) = self.peek_char() else {
            return Ok(Token {
                kind: TokKind::Eof,
                col,
            });
        };
        let kind = match c {
            c if is_word_char(c) => {
                let len = self
                    .rest
                    .find(|c: char| !is_word_char(c))
                    .unwrap_or(self.rest.len());
                // Word characters are ASCII, so bytes and columns agree.
                let (word, tail) = self.rest.split_at_checked(len).unwrap_or((self.rest, ""));
                self.rest = tail;
                self.col += len;
                TokKind::Word(word)
            }
            '`' => self.backtick_string(col)?,
            '"' => self.quoted_string(col)?,
            '&' | '|' => {
                self.bump();
                if self.peek_char() == Some(c) {
                    self.bump();
                    if c == '&' { TokKind::And } else { TokKind::Or }
                } else {
                    TokKind::Other(c)
                }
            }
            _ => {
                self.bump();
                match c {
                    '(' => TokKind::LParen,
                    ')' => TokKind::RParen,
                    ',' => TokKind::Comma,
                    '!' => TokKind::Not,
                    other => TokKind::Other(other),
                }
            }
        };
        Ok(Token { kind, col })
    }

    fn backtick_string(&mut self, start: usize) -> Result<TokKind<'a>, RuleError> {
        self.bump();
        let Some((body, tail)) = self.rest.split_once('`') else {
            return Err(RuleError::new(
                start,
                "unterminated string: missing the closing backtick",
            ));
        };
        self.col += body.chars().count() + 1;
        self.rest = tail;
        Ok(TokKind::Str(body.to_owned()))
    }

    fn quoted_string(&mut self, start: usize) -> Result<TokKind<'a>, RuleError> {
        self.bump();
        let mut value = String::new();
        loop {
            let col = self.col;
            match self.bump() {
                None => {
                    return Err(RuleError::new(
                        start,
                        "unterminated string: missing the closing double quote",
                    ));
                }
                Some('"') => return Ok(TokKind::Str(value)),
                Some('\\') => match self.bump() {
                    Some(c @ ('"' | '\\')) => value.push(c),
                    None => {
                        return Err(RuleError::new(
                            start,
                            "unterminated string: missing the closing double quote",
                        ));
                    }
                    Some(c) => {
                        return Err(RuleError::new(
                            col,
                            format!(
                                "unsupported escape `\\{c}` in a double-quoted string: only `\\\"` \
                                 and `\\\\` are allowed (backtick strings need no escapes)"
                            ),
                        ));
                    }
                },
                Some(c) => value.push(c),
            }
        }
    }
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

impl fmt::Display for TokKind<'_> {
    /// Describes the token for "found ..." in error messages.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TokKind::Word(w) => write!(f, "`{w}`"),
            TokKind::Str(_) => f.write_str("a string"),
            TokKind::LParen => f.write_str("`(`"),
            TokKind::RParen => f.write_str("`)`"),
            TokKind::Comma => f.write_str("`,`"),
            TokKind::And => f.write_str("`&&`"),
            TokKind::Or => f.write_str("`||`"),
            TokKind::Not => f.write_str("`!`"),
            TokKind::Other('&') => f.write_str("`&` (AND is written `&&`)"),
            TokKind::Other('|') => f.write_str("`|` (OR is written `||`)"),
            TokKind::Other('\'') => {
                f.write_str("`'` (strings are written in backticks or double quotes)")
            }
            TokKind::Other(c) if c.is_control() => {
                write!(f, "control character U+{:04X}", u32::from(*c))
            }
            TokKind::Other(c) => write!(f, "`{c}`"),
            TokKind::Eof => f.write_str("end of rule"),
        }
    }
}
