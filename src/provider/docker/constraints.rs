//! `providers.docker.constraints`: Traefik's label expressions.
//! ``Label(`key`, `value`)`` (exact), ``LabelRegex(`key`, `regex`)``
//! (unanchored, as Go's `regexp.MatchString`), combined with `!`, `&&`,
//! `||` and parentheses; strings in backticks or double quotes.

use regex::Regex;
use std::collections::BTreeMap;

/// An expression that does not parse.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("constraints `{expression}`: {reason}")]
pub struct ConstraintError {
    /// The expression as given.
    pub expression: String,
    /// What is wrong, and where.
    pub reason: ConstraintReason,
}

/// Where in an expression a mistake is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// At this 1-based column.
    Column(usize),
    /// The expression ended early.
    End,
}

impl std::fmt::Display for Position {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Position::Column(c) => write!(f, "column {c}"),
            Position::End => f.write_str("the end"),
        }
    }
}

/// What is wrong with a constraints expression.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ConstraintReason {
    /// A single `&` or `|`.
    #[error("`{operator}` at column {column}: write `{operator}{operator}`")]
    SingleOperator {
        /// `&` or `|`.
        operator: char,
        /// 1-based column.
        column: usize,
    },
    /// A string without its closing quote.
    #[error("string at column {column} is not closed")]
    UnclosedString {
        /// 1-based column of the opening quote.
        column: usize,
    },
    /// A character that starts no token.
    #[error("unexpected `{found}` at column {column}")]
    UnexpectedChar {
        /// The character.
        found: char,
        /// 1-based column.
        column: usize,
    },
    /// A whole expression followed by more.
    #[error("unexpected text at column {column}")]
    TrailingText {
        /// 1-based column of the first extra token.
        column: usize,
    },
    /// More nesting than the parser allows.
    #[error("too deeply nested")]
    TooDeep,
    /// A `(` without its `)`.
    #[error("expected `)` at {at}")]
    ExpectedClose {
        /// Where the `)` should be.
        at: Position,
    },
    /// Not the start of an expression.
    #[error("expected Label(…), LabelRegex(…), `!` or `(` at {at}")]
    ExpectedTerm {
        /// Where the expression should start.
        at: Position,
    },
    /// Not a function name.
    #[error("expected a function at {at}")]
    ExpectedFunction {
        /// Where the name should be.
        at: Position,
    },
    /// A function name without `(`.
    #[error("expected `(` after {function} at {at}")]
    ExpectedOpen {
        /// The function name.
        function: String,
        /// Where the `(` should be.
        at: Position,
    },
    /// An argument that is not a quoted string.
    #[error("expected a string at {at}")]
    ExpectedString {
        /// Where the string should be.
        at: Position,
    },
    /// Arguments not separated by `,` or closed by `)`.
    #[error("expected `,` or `)` at {at}")]
    ExpectedCommaOrClose {
        /// Where the `,` or `)` should be.
        at: Position,
    },
    /// A function called with other than two arguments.
    #[error("{function} at {at} takes 2 arguments, got {got}")]
    ArgumentCount {
        /// The function name.
        function: String,
        /// Where the call starts.
        at: Position,
        /// How many it was given.
        got: usize,
    },
    /// A `LabelRegex` whose regex does not compile.
    #[error("LabelRegex at {at}: {error}")]
    BadRegex {
        /// Where the call starts.
        at: Position,
        /// What the regex engine said.
        error: regex::Error,
    },
    /// A function other than `Label` and `LabelRegex`.
    #[error("unknown function `{function}` at {at} (use Label or LabelRegex)")]
    UnknownFunction {
        /// The function name.
        function: String,
        /// Where the call starts.
        at: Position,
    },
}

/// A parsed constraints expression.
#[derive(Clone, Debug)]
pub enum Constraints {
    /// The label exists with exactly this value.
    Label(String, String),
    /// The label's value (empty when absent) matches the regex somewhere.
    LabelRegex(String, Regex),
    /// Negation.
    Not(Box<Constraints>),
    /// Both.
    And(Box<Constraints>, Box<Constraints>),
    /// Either.
    Or(Box<Constraints>, Box<Constraints>),
}

impl Constraints {
    /// Parses an expression.
    pub fn parse(text: &str) -> Result<Constraints, ConstraintError> {
        let tokens = lex(text).map_err(|reason| ConstraintError {
            expression: text.to_owned(),
            reason,
        })?;
        let mut p = Parser {
            tokens: &tokens,
            at: 0,
            depth: 0,
        };
        let expr = p.or().and_then(|e| match p.tokens.get(p.at) {
            None => Ok(e),
            Some(&(_, column)) => Err(ConstraintReason::TrailingText { column }),
        });
        expr.map_err(|reason| ConstraintError {
            expression: text.to_owned(),
            reason,
        })
    }

    /// Whether the labels satisfy the expression.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Constraints::Label(k, v) => labels.get(k) == Some(v),
            Constraints::LabelRegex(k, re) => {
                re.is_match(labels.get(k).map(String::as_str).unwrap_or_default())
            }
            Constraints::Not(e) => !e.matches(labels),
            Constraints::And(a, b) => a.matches(labels) && b.matches(labels),
            Constraints::Or(a, b) => a.matches(labels) || b.matches(labels),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Open,
    Close,
    Comma,
    Not,
    And,
    Or,
}

/// Tokens with their 1-based column.
fn lex(s: &str) -> Result<Vec<(Tok, usize)>, ConstraintReason> {
    let mut out = Vec::new();
    let mut chars = s.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let col = s[..i].chars().count() + 1;
        let tok = match c {
            c if c.is_whitespace() => continue,
            '(' => Tok::Open,
            ')' => Tok::Close,
            ',' => Tok::Comma,
            '!' => Tok::Not,
            '&' | '|' => {
                if chars.next_if(|&(_, d)| d == c).is_none() {
                    return Err(ConstraintReason::SingleOperator {
                        operator: c,
                        column: col,
                    });
                }
                if c == '&' { Tok::And } else { Tok::Or }
            }
            '`' | '"' => {
                let mut text = String::new();
                let mut closed = false;
                while let Some((_, d)) = chars.next() {
                    if d == c {
                        closed = true;
                        break;
                    }
                    if c == '"' && d == '\\' {
                        if let Some((_, e)) = chars.next() {
                            text.push(e);
                        }
                        continue;
                    }
                    text.push(d);
                }
                if !closed {
                    return Err(ConstraintReason::UnclosedString { column: col });
                }
                Tok::Str(text)
            }
            c if c.is_alphabetic() => {
                let mut word = String::from(c);
                while let Some((_, d)) = chars.next_if(|&(_, d)| d.is_alphanumeric() || d == '_') {
                    word.push(d);
                }
                Tok::Ident(word)
            }
            other => {
                return Err(ConstraintReason::UnexpectedChar {
                    found: other,
                    column: col,
                });
            }
        };
        out.push((tok, col));
    }
    Ok(out)
}

struct Parser<'a> {
    tokens: &'a [(Tok, usize)],
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.tokens.get(self.at).map(|(t, _)| t)
    }

    fn col(&self) -> Position {
        match self.tokens.get(self.at) {
            Some(&(_, c)) => Position::Column(c),
            None => Position::End,
        }
    }

    fn or(&mut self) -> Result<Constraints, ConstraintReason> {
        let mut left = self.and()?;
        while self.peek() == Some(&Tok::Or) {
            self.at += 1;
            left = Constraints::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Constraints, ConstraintReason> {
        let mut left = self.unary()?;
        while self.peek() == Some(&Tok::And) {
            self.at += 1;
            left = Constraints::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Constraints, ConstraintReason> {
        // Bounded nesting, so hostile input cannot exhaust the stack.
        self.depth += 1;
        if self.depth > 64 {
            return Err(ConstraintReason::TooDeep);
        }
        let result = match self.peek() {
            Some(Tok::Not) => {
                self.at += 1;
                self.unary().map(|e| Constraints::Not(Box::new(e)))
            }
            Some(Tok::Open) => {
                self.at += 1;
                let e = self.or()?;
                if self.peek() != Some(&Tok::Close) {
                    return Err(ConstraintReason::ExpectedClose { at: self.col() });
                }
                self.at += 1;
                Ok(e)
            }
            Some(Tok::Ident(_)) => self.call(),
            _ => Err(ConstraintReason::ExpectedTerm { at: self.col() }),
        };
        self.depth -= 1;
        result
    }

    fn call(&mut self) -> Result<Constraints, ConstraintReason> {
        let Some(Tok::Ident(name)) = self.peek().cloned() else {
            return Err(ConstraintReason::ExpectedFunction { at: self.col() });
        };
        let col = self.col();
        self.at += 1;
        let mut args = Vec::new();
        if self.peek() != Some(&Tok::Open) {
            return Err(ConstraintReason::ExpectedOpen {
                function: name,
                at: self.col(),
            });
        }
        self.at += 1;
        loop {
            match self.peek().cloned() {
                Some(Tok::Str(s)) => {
                    self.at += 1;
                    args.push(s);
                }
                _ => return Err(ConstraintReason::ExpectedString { at: self.col() }),
            }
            match self.peek() {
                Some(Tok::Comma) => self.at += 1,
                Some(Tok::Close) => {
                    self.at += 1;
                    break;
                }
                _ => return Err(ConstraintReason::ExpectedCommaOrClose { at: self.col() }),
            }
        }
        let [key, value] = match <[String; 2]>::try_from(args) {
            Ok(pair) => pair,
            Err(a) => {
                return Err(ConstraintReason::ArgumentCount {
                    got: a.len(),
                    function: name,
                    at: col,
                });
            }
        };
        match name.as_str() {
            "Label" => Ok(Constraints::Label(key, value)),
            "LabelRegex" => Regex::new(&value)
                .map(|re| Constraints::LabelRegex(key, re))
                .map_err(|error| ConstraintReason::BadRegex { at: col, error }),
            _ => Err(ConstraintReason::UnknownFunction {
                function: name,
                at: col,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_read_as_the_messages_users_know() {
        for (expr, want) in [
            ("Label(`a`, `b`) & x", "`&` at column 17: write `&&`"),
            ("(Label(`a`, `b`)", "expected `)` at the end"),
            ("Label(`a`)", "Label at column 1 takes 2 arguments, got 1"),
            (
                "Tag(`a`, `b`)",
                "unknown function `Tag` at column 1 (use Label or LabelRegex)",
            ),
        ] {
            let e = Constraints::parse(expr).expect_err(expr);
            assert_eq!(e.reason.to_string(), want, "{expr}");
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn evaluates_traefik_expressions() {
        let l = labels(&[("a.tag", "blue"), ("env", "prod-eu")]);
        for (expr, want) in [
            ("Label(`a.tag`, `blue`)", true),
            ("Label(\"a.tag\", \"green\")", false),
            ("LabelRegex(`env`, `prod`)", true),
            ("LabelRegex(`env`, `^eu`)", false),
            ("LabelRegex(`missing`, `^$`)", true),
            ("!Label(`a.tag`, `blue`)", false),
            ("Label(`a.tag`,`x`) || Label(`env`,`prod-eu`)", true),
            (
                "Label(`a.tag`,`blue`) && !(Label(`env`,`x`) || Label(`env`,`y`))",
                true,
            ),
            (
                "Label(`a.tag`,`blue`) && Label(`env`,`x`) || Label(`env`,`prod-eu`)",
                true,
            ),
        ] {
            let c = Constraints::parse(expr).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(c.matches(&l), want, "{expr}");
        }
    }

    #[test]
    fn errors_name_the_place() {
        for (expr, needle) in [
            ("Label(`a`)", "takes 2 arguments"),
            ("Lable(`a`,`b`)", "unknown function `Lable`"),
            ("Label(`a`,`b`) & Label(`c`,`d`)", "write `&&`"),
            ("Label(`a`,`b`", "expected `,` or `)`"),
            ("LabelRegex(`a`,`(`)", "LabelRegex"),
            ("Label(`a`,`b`) x", "column 16"),
            ("", "expected Label"),
            ("Label(`a,`b`)", "not closed"),
        ] {
            let e = Constraints::parse(expr).expect_err(expr);
            assert!(e.to_string().contains(needle), "{expr}: {e}");
        }
        let deep = format!("{}Label(`a`,`b`){}", "(".repeat(200), ")".repeat(200));
        assert!(Constraints::parse(&deep).is_err());
    }
}
