//! Template text → a tree of nodes: the text is cut at `{{ … }}`, each
//! action is cut into tokens, and block actions (`if`, `range`, `with`)
//! gather the nodes up to their `end`.

use super::{TemplateError, Value, funcs};

/// A parsed template, ready to run any number of times.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    pub(super) nodes: Vec<Node>,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Node {
    Text(String),
    /// `{{ pipeline }}`: its value is written (unless it declares or
    /// assigns a variable).
    Action {
        pipe: Pipeline,
        line: usize,
    },
    If {
        pipe: Pipeline,
        then: Vec<Node>,
        otherwise: Vec<Node>,
        line: usize,
    },
    With {
        pipe: Pipeline,
        then: Vec<Node>,
        otherwise: Vec<Node>,
        line: usize,
    },
    Range {
        pipe: Pipeline,
        body: Vec<Node>,
        otherwise: Vec<Node>,
        line: usize,
    },
}

/// `$a, $b := cmd | cmd`.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Pipeline {
    /// The variables declared (`:=`) or assigned (`=`), without `$`.
    pub(super) vars: Vec<String>,
    pub(super) assign: bool,
    pub(super) commands: Vec<Vec<Operand>>,
}

#[derive(Clone, Debug, PartialEq)]
pub(super) enum Operand {
    /// `.A.B` (empty: `.` itself).
    Field(Vec<String>),
    /// `$x.A.B` (`$` alone is the data the template runs on).
    Var(String, Vec<String>),
    Literal(Value),
    Func(String),
    /// `( pipeline )`, with fields after it.
    Sub(Box<Pipeline>, Vec<String>),
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Field(Vec<String>),
    Var(String, Vec<String>),
    Literal(Value),
    Pipe,
    Open,
    /// `)` and the fields after it.
    Close(Vec<String>),
    Declare,
    Assign,
    Comma,
}

fn fail(line: usize, problem: impl Into<String>) -> TemplateError {
    TemplateError {
        line,
        problem: problem.into(),
    }
}

/// One piece of the text: plain text, or an action's inside.
enum Piece {
    Text(String),
    Action(String, usize),
}

/// Cuts `text` at its actions, applying `{{-` and `-}}` and dropping
/// comments.
fn pieces(text: &str) -> Result<Vec<Piece>, TemplateError> {
    let mut out = Vec::new();
    let mut rest = text;
    let mut line = 1;
    let mut trim_next = false;
    while let Some(open) = rest.find("{{") {
        let mut before = &rest[..open];
        if trim_next {
            before = before.trim_start();
        }
        let after = &rest[open + 2..];
        let trim_before = after.starts_with("- ")
            || after.starts_with("-\t")
            || after.starts_with("-\n")
            || after.starts_with("-\r");
        if trim_before {
            before = before.trim_end();
        }
        if !before.is_empty() {
            out.push(Piece::Text(before.to_owned()));
        }
        line += rest[..open].matches('\n').count();
        let inner_start = if trim_before { 1 } else { 0 };
        let close = find_close(after, line)?;
        let mut inner = &after[inner_start..close];
        trim_next = false;
        if inner.ends_with(" -")
            || inner.ends_with("\t-")
            || inner.ends_with("\n-")
            || inner.ends_with("\r-")
        {
            inner = &inner[..inner.len() - 1];
            trim_next = true;
        }
        let trimmed = inner.trim();
        if trimmed.starts_with("/*") {
            if !trimmed.ends_with("*/") {
                return Err(fail(line, "a comment must end with `*/` right before `}}`"));
            }
        } else {
            out.push(Piece::Action(inner.to_owned(), line));
        }
        line += after[..close + 2].matches('\n').count();
        rest = &after[close + 2..];
    }
    let rest = if trim_next { rest.trim_start() } else { rest };
    if !rest.is_empty() {
        out.push(Piece::Text(rest.to_owned()));
    }
    Ok(out)
}

/// Where the action opened just before `after` closes: the first `}}`
/// outside quotes.
fn find_close(after: &str, line: usize) -> Result<usize, TemplateError> {
    let bytes = after.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if b == b'\\' && q != b'`' {
                    i += 1;
                } else if b == q {
                    quote = None;
                }
            }
            None => {
                if b == b'"' || b == b'`' || b == b'\'' {
                    quote = Some(b);
                } else if bytes[i..].starts_with(b"}}") {
                    return Ok(i);
                }
            }
        }
        i += 1;
    }
    Err(fail(line, "`{{` without `}}`"))
}

fn tokens(inner: &str, line: usize) -> Result<Vec<Token>, TemplateError> {
    let chars: Vec<char> = inner.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '|' => {
                out.push(Token::Pipe);
                i += 1;
            }
            '(' => {
                out.push(Token::Open);
                i += 1;
            }
            ')' => {
                i += 1;
                let path = fields(&chars, &mut i);
                out.push(Token::Close(path));
            }
            ',' => {
                out.push(Token::Comma);
                i += 1;
            }
            ':' if chars.get(i + 1) == Some(&'=') => {
                out.push(Token::Declare);
                i += 2;
            }
            '=' => {
                out.push(Token::Assign);
                i += 1;
            }
            '"' => out.push(Token::Literal(Value::Str(quoted(&chars, &mut i, line)?))),
            '`' => {
                let start = i + 1;
                let Some(len) = chars[start..].iter().position(|&c| c == '`') else {
                    return Err(fail(line, "a raw string without its closing backquote"));
                };
                out.push(Token::Literal(Value::Str(
                    chars[start..start + len].iter().collect(),
                )));
                i = start + len + 1;
            }
            '\'' => {
                // A character constant is a number in Go.
                let (Some(ch), Some('\'')) = (chars.get(i + 1), chars.get(i + 2)) else {
                    return Err(fail(
                        line,
                        "a character constant must be one character: 'a'",
                    ));
                };
                out.push(Token::Literal(Value::Int(i64::from(u32::from(*ch)))));
                i += 3;
            }
            '.' => {
                if chars.get(i + 1).is_some_and(|c| word_char(*c)) {
                    out.push(Token::Field(fields(&chars, &mut i)));
                } else {
                    out.push(Token::Field(Vec::new()));
                    i += 1;
                }
            }
            '$' => {
                let start = i + 1;
                let mut end = start;
                while end < chars.len() && word_char(chars[end]) {
                    end += 1;
                }
                let name: String = chars[start..end].iter().collect();
                i = end;
                let path = fields(&chars, &mut i);
                out.push(Token::Var(name, path));
            }
            c if c.is_ascii_digit()
                || (c == '-' || c == '+') && chars.get(i + 1).is_some_and(char::is_ascii_digit) =>
            {
                out.push(Token::Literal(number(&chars, &mut i, line)?));
            }
            c if word_char(c) => {
                let start = i;
                while i < chars.len() && word_char(chars[i]) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                out.push(match word.as_str() {
                    "true" => Token::Literal(Value::Bool(true)),
                    "false" => Token::Literal(Value::Bool(false)),
                    "nil" => Token::Literal(Value::Nil),
                    _ => Token::Word(word),
                });
            }
            other => return Err(fail(line, format!("unexpected `{other}` in an action"))),
        }
    }
    Ok(out)
}

fn word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `.A.B` from `chars[*i..]`, moving `i` past it.
fn fields(chars: &[char], i: &mut usize) -> Vec<String> {
    let mut path = Vec::new();
    while *i < chars.len() && chars[*i] == '.' {
        let start = *i + 1;
        let mut end = start;
        while end < chars.len() && word_char(chars[end]) {
            end += 1;
        }
        if end == start {
            break;
        }
        path.push(chars[start..end].iter().collect());
        *i = end;
    }
    path
}

/// The interpreted string literal opening at `chars[*i]` (a `"`), moving
/// `i` past its closing quote.
fn quoted(chars: &[char], i: &mut usize, line: usize) -> Result<String, TemplateError> {
    let unclosed = || fail(line, "a string without its closing `\"`");
    let mut s = String::new();
    *i += 1;
    loop {
        match chars.get(*i) {
            None => return Err(unclosed()),
            Some('"') => break,
            Some('\\') => {
                let escaped = match chars.get(*i + 1) {
                    Some('n') => '\n',
                    Some('t') => '\t',
                    Some('r') => '\r',
                    Some('\\') => '\\',
                    Some('"') => '"',
                    Some('\'') => '\'',
                    Some(other) => {
                        return Err(fail(
                            line,
                            format!("unknown escape `\\{other}` in a string"),
                        ));
                    }
                    None => return Err(unclosed()),
                };
                s.push(escaped);
                *i += 2;
                continue;
            }
            Some(c) => s.push(*c),
        }
        *i += 1;
    }
    *i += 1;
    Ok(s)
}

/// The number starting at `chars[*i]` (Go's forms: `12`, `-3`, `1_000`,
/// `0x1f`, `1.5`), moving `i` past it.
fn number(chars: &[char], i: &mut usize, line: usize) -> Result<Value, TemplateError> {
    let start = *i;
    *i += 1;
    while *i < chars.len()
        && (chars[*i].is_ascii_alphanumeric() || chars[*i] == '.' || chars[*i] == '_')
    {
        *i += 1;
    }
    let text: String = chars[start..*i].iter().collect();
    let clean = text.replace('_', "");
    if let Ok(n) = clean.parse::<i64>() {
        Ok(Value::Int(n))
    } else if let Some(hex) = clean.strip_prefix("0x") {
        i64::from_str_radix(hex, 16)
            .map(Value::Int)
            .map_err(|_| fail(line, format!("`{text}` is not a number")))
    } else if let Ok(x) = clean.parse::<f64>() {
        Ok(Value::Float(x))
    } else {
        Err(fail(line, format!("`{text}` is not a number")))
    }
}

/// Reads a pipeline from `tokens` (all of them).
fn pipeline(tokens: &[Token], line: usize, declare: Declare) -> Result<Pipeline, TemplateError> {
    let mut vars = Vec::new();
    let mut assign = false;
    let mut rest = tokens;
    // `$x :=`, `$x =`, or `$i, $v :=` (range only).
    let decl_at = rest
        .iter()
        .position(|t| matches!(t, Token::Declare | Token::Assign));
    if let Some(at) = decl_at {
        let names = &rest[..at];
        let mut ok = !names.is_empty();
        for (n, t) in names.iter().enumerate() {
            match t {
                Token::Var(name, path) if path.is_empty() && n % 2 == 0 => vars.push(name.clone()),
                Token::Comma if n % 2 == 1 => {}
                _ => ok = false,
            }
        }
        let allowed = match declare {
            Declare::Range => 2,
            Declare::One => 1,
        };
        if !ok || vars.len() > allowed {
            return Err(fail(
                line,
                "variables are declared as `$x :=` (or `$i, $v :=` in range)",
            ));
        }
        assign = matches!(rest[at], Token::Assign);
        rest = &rest[at + 1..];
    }
    let mut commands = Vec::new();
    let mut i = 0;
    let mut current = Vec::new();
    while i < rest.len() {
        match &rest[i] {
            Token::Pipe => {
                if current.is_empty() {
                    return Err(fail(line, "missing command around `|`"));
                }
                commands.push(std::mem::take(&mut current));
                i += 1;
            }
            Token::Open => {
                let mut depth = 1;
                let mut j = i + 1;
                while j < rest.len() {
                    match rest[j] {
                        Token::Open => depth += 1,
                        Token::Close(_) => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    j += 1;
                }
                let Some(Token::Close(path)) = rest.get(j) else {
                    return Err(fail(line, "`(` without `)`"));
                };
                let inner = pipeline(&rest[i + 1..j], line, Declare::One)?;
                current.push(Operand::Sub(Box::new(inner), path.clone()));
                i = j + 1;
            }
            Token::Close(_) => return Err(fail(line, "`)` without `(`")),
            Token::Word(w) => {
                if matches!(
                    w.as_str(),
                    "if" | "else" | "end" | "range" | "with" | "define" | "template" | "block"
                ) {
                    return Err(fail(
                        line,
                        format!("`{w}` cannot be used inside a pipeline"),
                    ));
                }
                current.push(Operand::Func(w.clone()));
                i += 1;
            }
            Token::Field(path) => {
                current.push(Operand::Field(path.clone()));
                i += 1;
            }
            Token::Var(name, path) => {
                current.push(Operand::Var(name.clone(), path.clone()));
                i += 1;
            }
            Token::Literal(v) => {
                current.push(Operand::Literal(v.clone()));
                i += 1;
            }
            Token::Declare | Token::Assign | Token::Comma => {
                return Err(fail(
                    line,
                    "`:=`, `=` and `,` only follow variables at the start",
                ));
            }
        }
    }
    if current.is_empty() {
        return Err(fail(line, "missing value in the action"));
    }
    commands.push(current);
    Ok(Pipeline {
        vars,
        assign,
        commands,
    })
}

#[derive(Clone, Copy)]
enum Declare {
    One,
    Range,
}

/// A block being read: its kind, pipeline, line, and where nodes go.
struct Open {
    kind: &'static str,
    pipe: Pipeline,
    line: usize,
    then: Vec<Node>,
    otherwise: Option<Vec<Node>>,
    /// Closed by the same `end` as the block that holds it (`else if`).
    chained: bool,
}

impl Open {
    fn nodes(&mut self) -> &mut Vec<Node> {
        match &mut self.otherwise {
            Some(o) => o,
            None => &mut self.then,
        }
    }

    fn close(self) -> Node {
        let Open {
            kind,
            pipe,
            line,
            then,
            otherwise,
            ..
        } = self;
        let otherwise = otherwise.unwrap_or_default();
        match kind {
            "if" => Node::If {
                pipe,
                then,
                otherwise,
                line,
            },
            "with" => Node::With {
                pipe,
                then,
                otherwise,
                line,
            },
            _ => Node::Range {
                pipe,
                body: then,
                otherwise,
                line,
            },
        }
    }
}

impl Template {
    /// Parses `text`; the first mistake is the error, with its line.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let mut top = Vec::new();
        let mut stack: Vec<Open> = Vec::new();
        for piece in pieces(text)? {
            let (inner, line) = match piece {
                Piece::Text(t) => {
                    match stack.last_mut() {
                        Some(open) => open.nodes().push(Node::Text(t)),
                        None => top.push(Node::Text(t)),
                    }
                    continue;
                }
                Piece::Action(inner, line) => (inner, line),
            };
            let toks = tokens(&inner, line)?;
            let keyword = match toks.first() {
                Some(Token::Word(w)) => w.as_str(),
                _ => "",
            };
            match keyword {
                "if" | "with" | "range" => {
                    let declare = if keyword == "range" {
                        Declare::Range
                    } else {
                        Declare::One
                    };
                    let pipe = pipeline(&toks[1..], line, declare)?;
                    stack.push(Open {
                        kind: if keyword == "if" {
                            "if"
                        } else if keyword == "with" {
                            "with"
                        } else {
                            "range"
                        },
                        pipe,
                        line,
                        then: Vec::new(),
                        otherwise: None,
                        chained: false,
                    });
                }
                "else" => {
                    let Some(open) = stack.last_mut() else {
                        return Err(fail(line, "`else` outside `if`, `with` or `range`"));
                    };
                    if open.otherwise.is_some() {
                        return Err(fail(line, "a second `else` in one block"));
                    }
                    open.otherwise = Some(Vec::new());
                    match toks.get(1) {
                        None => {}
                        Some(Token::Word(w)) if w == "if" || w == "with" => {
                            if open.kind != w {
                                return Err(fail(
                                    line,
                                    format!("`else {w}` inside `{}`", open.kind),
                                ));
                            }
                            let pipe = pipeline(&toks[2..], line, Declare::One)?;
                            let kind = open.kind;
                            stack.push(Open {
                                kind,
                                pipe,
                                line,
                                then: Vec::new(),
                                otherwise: None,
                                chained: true,
                            });
                        }
                        Some(_) => return Err(fail(line, "`else` takes nothing, or `if …`")),
                    }
                }
                "end" => {
                    if toks.len() > 1 {
                        return Err(fail(line, "`end` takes nothing"));
                    }
                    loop {
                        let Some(open) = stack.pop() else {
                            return Err(fail(line, "`end` without `if`, `with` or `range`"));
                        };
                        let chained = open.chained;
                        let node = open.close();
                        match stack.last_mut() {
                            Some(parent) => parent.nodes().push(node),
                            None => top.push(node),
                        }
                        if !chained {
                            break;
                        }
                    }
                }
                "define" | "template" | "block" | "break" | "continue" => {
                    return Err(fail(
                        line,
                        format!("`{keyword}` is not supported in gangway's templates"),
                    ));
                }
                _ => {
                    let pipe = pipeline(&toks, line, Declare::One)?;
                    let node = Node::Action { pipe, line };
                    match stack.last_mut() {
                        Some(open) => open.nodes().push(node),
                        None => top.push(node),
                    }
                }
            }
        }
        if let Some(open) = stack.last() {
            return Err(fail(
                open.line,
                format!("`{}` without its `end`", open.kind),
            ));
        }
        let template = Template { nodes: top };
        template.check_functions()?;
        Ok(template)
    }
}

impl Template {
    /// Calls `each` with every operand of every pipeline, in order, with its
    /// line and whether `.` is still the data there (outside `with` and
    /// `range`, which move it).
    fn operands(
        &self,
        each: &mut dyn FnMut(&Operand, usize, bool) -> Result<(), TemplateError>,
    ) -> Result<(), TemplateError> {
        type Each<'e> = dyn FnMut(&Operand, usize, bool) -> Result<(), TemplateError> + 'e;
        fn pipe(
            p: &Pipeline,
            line: usize,
            top: bool,
            each: &mut Each<'_>,
        ) -> Result<(), TemplateError> {
            for operand in p.commands.iter().flatten() {
                each(operand, line, top)?;
                if let Operand::Sub(inner, _) = operand {
                    pipe(inner, line, top, each)?;
                }
            }
            Ok(())
        }
        fn nodes(list: &[Node], top: bool, each: &mut Each<'_>) -> Result<(), TemplateError> {
            for node in list {
                match node {
                    Node::Text(_) => {}
                    Node::Action { pipe: p, line } => pipe(p, *line, top, each)?,
                    Node::If {
                        pipe: p,
                        then,
                        otherwise,
                        line,
                    } => {
                        pipe(p, *line, top, each)?;
                        nodes(then, top, each)?;
                        nodes(otherwise, top, each)?;
                    }
                    Node::With {
                        pipe: p,
                        then: body,
                        otherwise,
                        line,
                    }
                    | Node::Range {
                        pipe: p,
                        body,
                        otherwise,
                        line,
                    } => {
                        pipe(p, *line, top, each)?;
                        nodes(body, false, each)?;
                        nodes(otherwise, top, each)?;
                    }
                }
            }
            Ok(())
        }
        nodes(&self.nodes, true, each)
    }

    /// Checks that every function named exists, so that a misspelt
    /// function fails the template even in a branch that does not run.
    fn check_functions(&self) -> Result<(), TemplateError> {
        self.operands(&mut |operand, line, _| match operand {
            Operand::Func(name) if !funcs::NAMES.contains(&name.as_str()) => {
                Err(fail(line, format!("function `{name}` is not defined")))
            }
            _ => Ok(()),
        })
    }

    /// Checks that every field the template reads from its data (`.Name`,
    /// `$.Name`) is one of `known`, as Go refuses a field a struct does not
    /// have; inside `with` and `range`, where `.` is something else, only
    /// `$.` is checked.
    pub fn check_fields(&self, known: &[&str]) -> Result<(), TemplateError> {
        self.operands(&mut |operand, line, top| {
            let first = match operand {
                Operand::Field(path) if top => path.first(),
                Operand::Var(name, path) if name.is_empty() => path.first(),
                _ => None,
            };
            match first {
                Some(field) if !known.contains(&field.as_str()) => Err(fail(
                    line,
                    format!(
                        "unknown field `.{field}` (the fields are {})",
                        known
                            .iter()
                            .map(|k| format!(".{k}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )),
                _ => Ok(()),
            }
        })
    }
}
