//! Recursive-descent parser from rule text to the rule tree.
//!
//! ```text
//! rule    = or EOF
//! or      = and { "||" and }
//! and     = unary { "&&" unary }
//! unary   = "!" unary | "(" or ")" | matcher
//! matcher = NAME "(" [ STRING { "," STRING } ] ")"
//! ```

use super::leaf::{self, Arg};
use super::lexer::{Lexer, TokKind, Token};
use super::v2;
use super::{Dialect, MAX_NESTING, MAX_RULE_BYTES, Node, RuleError};

/// Parses a whole rule.
pub(super) fn parse(text: &str, dialect: Dialect) -> Result<Node, RuleError> {
    if text.len() > MAX_RULE_BYTES {
        return Err(RuleError::new(
            1,
            format!(
                "rule is too long: {} bytes, the limit is {MAX_RULE_BYTES}",
                text.len()
            ),
        ));
    }
    if text.trim().is_empty() {
        return Err(RuleError::new(
            1,
            match dialect {
                Dialect::Http | Dialect::HttpV2 => {
                    "empty rule: expected a matcher such as Host(`example.com`)"
                }
                Dialect::Tcp => "empty rule: expected a matcher such as HostSNI(`example.com`)",
            },
        ));
    }
    let mut parser = Parser {
        lexer: Lexer::new(text),
        peeked: None,
        depth: 0,
        dialect,
    };
    let root = parser.or(After::Start)?;
    let end = parser.next()?;
    match end.kind {
        TokKind::Eof => Ok(root),
        TokKind::RParen => Err(RuleError::new(
            end.col,
            "unexpected `)` without a matching `(`",
        )),
        found => Err(RuleError::new(
            end.col,
            format!("expected `&&`, `||` or end of rule, found {found}"),
        )),
    }
}

/// What came just before an expected operand, for error messages.
#[derive(Clone, Copy)]
enum After {
    Start,
    And,
    Or,
    Not,
    Open,
}

impl After {
    fn describe(self) -> &'static str {
        match self {
            After::Start => "",
            After::And => " after `&&`",
            After::Or => " after `||`",
            After::Not => " after `!`",
            After::Open => " after `(`",
        }
    }
}

struct Parser<'a> {
    lexer: Lexer<'a>,
    peeked: Option<Token<'a>>,
    /// Current nesting of parentheses and negations.
    depth: usize,
    /// Which matchers the rule may use.
    dialect: Dialect,
}

impl<'a> Parser<'a> {
    fn next(&mut self) -> Result<Token<'a>, RuleError> {
        match self.peeked.take() {
            Some(tok) => Ok(tok),
            None => self.lexer.next_token(),
        }
    }

    fn peek(&mut self) -> Result<&TokKind<'a>, RuleError> {
        let tok = match self.peeked.take() {
            Some(tok) => tok,
            None => self.lexer.next_token()?,
        };
        Ok(&self.peeked.insert(tok).kind)
    }

    fn or(&mut self, after: After) -> Result<Node, RuleError> {
        let first = self.and(after)?;
        if *self.peek()? != TokKind::Or {
            return Ok(first);
        }
        let mut items = vec![first];
        while *self.peek()? == TokKind::Or {
            self.next()?;
            items.push(self.and(After::Or)?);
        }
        Ok(Node::Or(items))
    }

    fn and(&mut self, after: After) -> Result<Node, RuleError> {
        let first = self.unary(after)?;
        if *self.peek()? != TokKind::And {
            return Ok(first);
        }
        let mut items = vec![first];
        while *self.peek()? == TokKind::And {
            self.next()?;
            items.push(self.unary(After::And)?);
        }
        Ok(Node::And(items))
    }

    fn unary(&mut self, after: After) -> Result<Node, RuleError> {
        let tok = self.next()?;
        match tok.kind {
            TokKind::Not => {
                self.enter(tok.col)?;
                let inner = self.unary(After::Not)?;
                self.depth -= 1;
                Ok(Node::Not(Box::new(inner)))
            }
            TokKind::LParen => {
                self.enter(tok.col)?;
                let inner = self.or(After::Open)?;
                let close = self.next()?;
                if close.kind != TokKind::RParen {
                    return Err(RuleError::new(
                        close.col,
                        format!(
                            "expected `&&`, `||` or `)` to close the `(` at column {}, found {}",
                            tok.col, close.kind
                        ),
                    ));
                }
                self.depth -= 1;
                Ok(inner)
            }
            TokKind::Word(name) => self.matcher(name, tok.col),
            TokKind::Str(_) => Err(RuleError::new(
                tok.col,
                format!(
                    "expected a matcher{}, found a string; strings go inside a matcher, \
                     as in Host(`example.com`)",
                    after.describe()
                ),
            )),
            found => Err(RuleError::new(
                tok.col,
                format!(
                    "expected a matcher or `(`{}, found {found}",
                    after.describe()
                ),
            )),
        }
    }

    fn enter(&mut self, col: usize) -> Result<(), RuleError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(RuleError::new(
                col,
                format!(
                    "rule is nested too deeply: more than {MAX_NESTING} levels of \
                     parentheses and `!`"
                ),
            ));
        }
        Ok(())
    }

    fn matcher(&mut self, name: &str, name_col: usize) -> Result<Node, RuleError> {
        let kind = match self.dialect {
            Dialect::HttpV2 => v2::lookup(name)
                .map(|(canonical, kind)| Which::V2(canonical, kind))
                .ok_or_else(|| RuleError::new(name_col, v2::unknown_matcher_message(name)))?,
            dialect => leaf::lookup(name, dialect).map(Which::V3).ok_or_else(|| {
                RuleError::new(name_col, leaf::unknown_matcher_message(name, dialect))
            })?,
        };
        let open = self.next()?;
        if open.kind != TokKind::LParen {
            return Err(RuleError::new(
                open.col,
                format!("expected `(` after `{name}`, found {}", open.kind),
            ));
        }
        let mut args = Vec::new();
        if *self.peek()? == TokKind::RParen {
            self.next()?;
        } else {
            loop {
                let tok = self.next()?;
                match tok.kind {
                    TokKind::Str(value) => args.push(Arg {
                        value,
                        col: tok.col,
                    }),
                    TokKind::Word(word) => {
                        return Err(RuleError::new(
                            tok.col,
                            format!(
                                "expected a string argument for `{name}`, found `{word}`; \
                                 arguments must be quoted with backticks or double quotes"
                            ),
                        ));
                    }
                    found => {
                        return Err(RuleError::new(
                            tok.col,
                            format!(
                                "expected a string argument for `{name}` (in backticks or \
                                 double quotes), found {found}"
                            ),
                        ));
                    }
                }
                let sep = self.next()?;
                match sep.kind {
                    TokKind::Comma => {}
                    TokKind::RParen => break,
                    found => {
                        return Err(RuleError::new(
                            sep.col,
                            format!(
                                "expected `)` or `,` after argument of `{name}`, found {found}"
                            ),
                        ));
                    }
                }
            }
        }
        match kind {
            Which::V3(kind) => leaf::build(kind, name_col, args).map(Node::Leaf),
            Which::V2(canonical, kind) => v2::build(kind, canonical, name_col, args),
        }
    }
}

/// A matcher of either syntax.
enum Which {
    V3(leaf::Kind),
    /// With the name v2's documentation gives it, for messages.
    V2(&'static str, v2::Kind),
}
