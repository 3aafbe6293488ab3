//! `providers.docker.constraints`: Traefik's label expressions.
//! ``Label(`key`, `value`)`` (exact), ``LabelRegex(`key`, `regex`)``
//! (unanchored, as Go's `regexp.MatchString`), combined with `!`, `&&`,
//! `||` and parentheses; strings in backticks or double quotes.

use regex::Regex;
use std::collections::BTreeMap;

/// An expression that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("constraints `{expression}`: {message}")]
pub struct ConstraintError {
    /// The expression as given.
    pub expression: String,
    /// What is wrong, with the column.
    pub message: String,
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
        let tokens = lex(text).map_err(|message| ConstraintError {
            expression: text.to_owned(),
            message,
        })?;
        let mut p = Parser {
            tokens: &tokens,
            at: 0,
            depth: 0,
        };
        let expr = p.or().and_then(|e| match p.tokens.get(p.at) {
            None => Ok(e),
            Some((_, col)) => Err(format!("unexpected text at column {col}")),
        });
        expr.map_err(|message| ConstraintError {
            expression: text.to_owned(),
            message,
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
fn lex(s: &str) -> Result<Vec<(Tok, usize)>, String> {
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
                    return Err(format!("`{c}` at column {col}: write `{c}{c}`"));
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
                    return Err(format!("string at column {col} is not closed"));
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
            other => return Err(format!("unexpected `{other}` at column {col}")),
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

    fn col(&self) -> String {
        match self.tokens.get(self.at) {
            Some((_, c)) => format!("column {c}"),
            None => "the end".to_owned(),
        }
    }

    fn or(&mut self) -> Result<Constraints, String> {
        let mut left = self.and()?;
        while self.peek() == Some(&Tok::Or) {
            self.at += 1;
            left = Constraints::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Constraints, String> {
        let mut left = self.unary()?;
        while self.peek() == Some(&Tok::And) {
            self.at += 1;
            left = Constraints::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Constraints, String> {
        // Bounded nesting, so hostile input cannot exhaust the stack.
        self.depth += 1;
        if self.depth > 64 {
            return Err("too deeply nested".to_owned());
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
                    return Err(format!("expected `)` at {}", self.col()));
                }
                self.at += 1;
                Ok(e)
            }
            Some(Tok::Ident(_)) => self.call(),
            _ => Err(format!(
                "expected Label(…), LabelRegex(…), `!` or `(` at {}",
                self.col()
            )),
        };
        self.depth -= 1;
        result
    }

    fn call(&mut self) -> Result<Constraints, String> {
        let Some(Tok::Ident(name)) = self.peek().cloned() else {
            return Err(format!("expected a function at {}", self.col()));
        };
        let col = self.col();
        self.at += 1;
        let mut args = Vec::new();
        if self.peek() != Some(&Tok::Open) {
            return Err(format!("expected `(` after {name} at {}", self.col()));
        }
        self.at += 1;
        loop {
            match self.peek().cloned() {
                Some(Tok::Str(s)) => {
                    self.at += 1;
                    args.push(s);
                }
                _ => return Err(format!("expected a string at {}", self.col())),
            }
            match self.peek() {
                Some(Tok::Comma) => self.at += 1,
                Some(Tok::Close) => {
                    self.at += 1;
                    break;
                }
                _ => return Err(format!("expected `,` or `)` at {}", self.col())),
            }
        }
        let [key, value] = <[String; 2]>::try_from(args)
            .map_err(|a| format!("{name} at {col} takes 2 arguments, got {}", a.len()))?;
        match name.as_str() {
            "Label" => Ok(Constraints::Label(key, value)),
            "LabelRegex" => Regex::new(&value)
                .map(|re| Constraints::LabelRegex(key, re))
                .map_err(|e| format!("LabelRegex at {col}: {e}")),
            other => Err(format!(
                "unknown function `{other}` at {col} (use Label or LabelRegex)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
