//! The `defaultRule` template: the part of Go's template language that
//! Traefik's default rules use. Text with `{{ … }}` actions; an action is a
//! value (`.Name`, `"text"`), a function applied to values
//! (`normalize .Name`, `index .Labels "key"`), a pipeline of those
//! (`.Service | lower`), and a parenthesised pipeline as an argument
//! (`lower (trimPrefix "/" .Name)`). The functions are the sprig ones
//! Traefik users put in a defaultRule, plus Traefik's `normalize`. Parsed once at start, so a mistake stops gangway
//! with a message instead of failing per container.

use std::collections::BTreeMap;

/// A template that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("defaultRule template `{template}`: {reason}")]
pub struct TemplateError {
    /// The template as given.
    pub template: String,
    /// What is wrong.
    pub reason: TemplateReason,
}

/// What is wrong with a template, found when parsing it or filling it in.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TemplateReason {
    /// An action that is opened and never closed.
    #[error("`{{{{` without `}}}}`")]
    UnclosedAction,
    /// A close without an open.
    #[error("`}}}}` without `{{{{`")]
    StrayClose,
    /// `{{ }}` with nothing inside.
    #[error("empty action `{{{{ }}}}`")]
    EmptyAction,
    /// A `|` with no command on one side.
    #[error("empty command around `|`")]
    EmptyCommand,
    /// A function the template language here does not have.
    #[error("unknown function `{name}` (known: {})", FUNCS.join(", "))]
    UnknownFunction {
        /// The name as written.
        name: String,
    },
    /// A field the model does not have.
    #[error("unknown field `.{name}` (known: .{})", FIELDS.join(", ."))]
    UnknownField {
        /// The name as written, without the dot.
        name: String,
    },
    /// A bare word where an argument should be.
    #[error("`{word}` here must be a value")]
    NotAValue {
        /// The word.
        word: String,
    },
    /// A string without its closing quote.
    #[error("unterminated string at {at}")]
    UnterminatedString {
        /// 1-based byte offset of the opening quote inside the action.
        at: usize,
    },
    /// Go's `.` (the whole model), which has no text form here.
    #[error("`.` alone is not supported; use a field such as .Name")]
    LoneDot,
    /// A function given `.Labels` where it needs text.
    #[error("`{function}` needs text, not .Labels (use index .Labels \"key\")")]
    NeedsText {
        /// The function.
        function: &'static str,
    },
    /// An action whose value is `.Labels` itself.
    #[error(".Labels is a map; use index .Labels \"key\"")]
    LabelsIsMap,
    /// Several values without a function.
    #[error("an action holds one value, or a function and its arguments")]
    OneValue,
    /// A function given the wrong number of arguments.
    #[error("`{function}` takes {arity} argument{}, got {got}", if *.arity == 1 { "" } else { "s" })]
    Arity {
        /// The function.
        function: &'static str,
        /// How many it takes.
        arity: usize,
        /// How many it was given.
        got: usize,
    },
    /// `index` on something other than `.Labels`.
    #[error("`index` works on .Labels: index .Labels \"key\"")]
    IndexNeedsLabels,
    /// A `(` without its `)`, or the reverse.
    #[error("unbalanced parentheses")]
    Unbalanced,
    /// `()` with nothing inside.
    #[error("empty parentheses `()`")]
    EmptyParens,
}

/// What a template can refer to, for one container.
#[derive(Clone, Debug, Default)]
pub struct Model<'a> {
    /// The service name: compose `service_project`, else the container
    /// name, normalized (Traefik's `.Name`).
    pub name: &'a str,
    /// The container name.
    pub container_name: &'a str,
    /// The compose project, or empty.
    pub project: &'a str,
    /// The compose service, or empty.
    pub service: &'a str,
    /// `providers.docker.domain`.
    pub domain: &'a str,
    /// The container's labels.
    pub labels: Option<&'a BTreeMap<String, String>>,
}

const FIELDS: &[&str] = &[
    "Name",
    "ContainerName",
    "Project",
    "Service",
    "Domain",
    "Labels",
];
const FUNCS: &[&str] = &[
    "normalize",
    "lower",
    "upper",
    "trim",
    "index",
    "trimPrefix",
    "trimSuffix",
    "replace",
    "default",
    "trimAll",
    "title",
    "lcfirst",
    "ucfirst",
];

#[derive(Clone, Debug, PartialEq)]
enum Arg {
    Field(&'static str),
    Text(String),
    /// `( … )`: a pipeline whose result is the argument.
    Pipeline(Vec<Command>),
}

#[derive(Clone, Debug, PartialEq)]
struct Command {
    func: Option<&'static str>,
    args: Vec<Arg>,
}

#[derive(Clone, Debug, PartialEq)]
enum Part {
    Text(String),
    Action(Vec<Command>),
}

/// A parsed template.
#[derive(Clone, Debug, PartialEq)]
pub struct Template {
    parts: Vec<Part>,
}

/// Traefik's `normalize`: runs of characters other than letters and digits
/// become one `-`, trimmed at both ends.
pub fn normalize(name: &str) -> String {
    name.split(|c: char| !c.is_alphanumeric())
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

impl Template {
    /// Parses `text`.
    pub fn parse(text: &str) -> Result<Template, TemplateError> {
        let err = |reason: TemplateReason| TemplateError {
            template: text.to_owned(),
            reason,
        };
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or_else(|| err(TemplateReason::UnclosedAction))?;
            let inner = after[..close].trim_matches('-').trim();
            parts.push(Part::Action(parse_action(inner).map_err(err)?));
            rest = &after[close + 2..];
        }
        if rest.contains("}}") {
            return Err(err(TemplateReason::StrayClose));
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        let t = Template { parts };
        // Catch arity mistakes now rather than on the first container.
        t.render(&Model::default()).map_err(err)?;
        Ok(t)
    }

    /// Fills the template in for one container.
    pub fn render(&self, model: &Model<'_>) -> Result<String, TemplateReason> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Action(commands) => match run(commands, model)? {
                    Some(Value::Text(t)) => out.push_str(&t),
                    Some(Value::Labels(_)) => return Err(TemplateReason::LabelsIsMap),
                    None => {}
                },
            }
        }
        Ok(out)
    }
}

enum Value<'a> {
    Text(String),
    Labels(Option<&'a BTreeMap<String, String>>),
}

impl Value<'_> {
    fn text(self, function: &'static str) -> Result<String, TemplateReason> {
        match self {
            Value::Text(t) => Ok(t),
            Value::Labels(_) => Err(TemplateReason::NeedsText { function }),
        }
    }
}

/// Runs a pipeline: each command's result is the last argument of the next.
fn run<'a>(commands: &[Command], model: &Model<'a>) -> Result<Option<Value<'a>>, TemplateReason> {
    let mut piped: Option<Value<'a>> = None;
    for c in commands {
        let mut args = Vec::with_capacity(c.args.len() + 1);
        for a in &c.args {
            args.push(value(a, model)?);
        }
        if let Some(p) = piped.take() {
            args.push(p);
        }
        piped = Some(call(c.func, args)?);
    }
    Ok(piped)
}

fn value<'a>(arg: &Arg, m: &Model<'a>) -> Result<Value<'a>, TemplateReason> {
    Ok(match arg {
        Arg::Text(t) => Value::Text(t.clone()),
        Arg::Pipeline(commands) => run(commands, m)?.ok_or(TemplateReason::EmptyParens)?,
        Arg::Field("Labels") => Value::Labels(m.labels),
        Arg::Field(f) => Value::Text(
            match *f {
                "Name" => m.name,
                "ContainerName" => m.container_name,
                "Project" => m.project,
                "Service" => m.service,
                _ => m.domain,
            }
            .to_owned(),
        ),
    })
}

fn call<'a>(
    func: Option<&'static str>,
    mut args: Vec<Value<'a>>,
) -> Result<Value<'a>, TemplateReason> {
    let Some(func) = func else {
        return match (args.pop(), args.is_empty()) {
            (Some(Value::Text(t)), true) => Ok(Value::Text(t)),
            // A map may be handed on (`(.Labels) | index …` is rare but valid Go);
            // printing it is refused where the action ends.
            (Some(Value::Labels(l)), true) => Ok(Value::Labels(l)),
            _ => Err(TemplateReason::OneValue),
        };
    };
    let arity = match func {
        "index" | "trimPrefix" | "trimSuffix" | "default" | "trimAll" => 2,
        "replace" => 3,
        _ => 1,
    };
    if args.len() != arity {
        return Err(TemplateReason::Arity {
            function: func,
            arity,
            got: args.len(),
        });
    }
    if func == "index" {
        let key = args
            .pop()
            .map(|v| v.text("index"))
            .transpose()?
            .unwrap_or_default();
        return match args.pop() {
            Some(Value::Labels(labels)) => Ok(Value::Text(
                labels
                    .and_then(|l| l.get(&key))
                    .cloned()
                    .unwrap_or_default(),
            )),
            _ => Err(TemplateReason::IndexNeedsLabels),
        };
    }
    let mut texts = Vec::with_capacity(args.len());
    for a in args {
        texts.push(a.text(func)?);
    }
    let t = |i: usize| texts.get(i).map(String::as_str).unwrap_or_default();
    Ok(Value::Text(match func {
        "normalize" => normalize(t(0)),
        "lower" => t(0).to_lowercase(),
        "upper" => t(0).to_uppercase(),
        "trim" => t(0).trim().to_owned(),
        // Go's argument order: the prefix first, the text last (it is what a pipe supplies).
        "trimPrefix" => t(1).strip_prefix(t(0)).unwrap_or(t(1)).to_owned(),
        "trimSuffix" => t(1).strip_suffix(t(0)).unwrap_or(t(1)).to_owned(),
        // sprig's `trimAll`: every character of the set, from both ends.
        "trimAll" => t(1).trim_matches(|c| t(0).contains(c)).to_owned(),
        "title" => title(t(0)),
        "lcfirst" => first_with(t(0), char::to_lowercase),
        "ucfirst" => first_with(t(0), char::to_uppercase),
        "replace" => t(2).replace(t(0), t(1)),
        // sprig's `default`: the fallback first, used when the value is empty.
        _ => {
            if t(1).is_empty() {
                t(0).to_owned()
            } else {
                t(1).to_owned()
            }
        }
    }))
}

/// Strings' first letter of each word upper-cased, as sprig's `title`.
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut at_start = true;
    for c in s.chars() {
        if at_start {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        at_start = !c.is_alphanumeric();
    }
    out
}

fn first_with<I: Iterator<Item = char>>(s: &str, f: impl Fn(char) -> I) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) => f(c).chain(chars).collect(),
        None => String::new(),
    }
}

fn parse_action(inner: &str) -> Result<Vec<Command>, TemplateReason> {
    if inner.is_empty() {
        return Err(TemplateReason::EmptyAction);
    }
    let tokens = tokenize(inner)?;
    let mut at = 0;
    let commands = parse_pipeline(&tokens, &mut at)?;
    match tokens.get(at) {
        None => Ok(commands),
        Some(_) => Err(TemplateReason::Unbalanced),
    }
}

/// Reads commands separated by `|` from `tokens[*at..]` up to a `)` or the
/// end, leaving `*at` on what stopped it.
fn parse_pipeline(tokens: &[Token], at: &mut usize) -> Result<Vec<Command>, TemplateReason> {
    let mut commands = Vec::new();
    loop {
        let mut func = None;
        if let Some(Token::Word(w)) = tokens.get(*at) {
            let f = FUNCS
                .iter()
                .find(|f| **f == w.as_str())
                .ok_or_else(|| TemplateReason::UnknownFunction { name: w.clone() })?;
            func = Some(*f);
            *at += 1;
        }
        let mut args = Vec::new();
        while let Some(token) = tokens.get(*at) {
            args.push(match token {
                Token::Pipe | Token::Close => break,
                Token::Field(f) => Arg::Field(
                    FIELDS
                        .iter()
                        .find(|k| **k == f.as_str())
                        .ok_or_else(|| TemplateReason::UnknownField { name: f.clone() })?,
                ),
                Token::Text(t) => Arg::Text(t.clone()),
                Token::Word(w) => return Err(TemplateReason::NotAValue { word: w.clone() }),
                Token::Open => {
                    *at += 1;
                    if tokens.get(*at) == Some(&Token::Close) {
                        return Err(TemplateReason::EmptyParens);
                    }
                    let inner = parse_pipeline(tokens, at)?;
                    if tokens.get(*at) != Some(&Token::Close) {
                        return Err(TemplateReason::Unbalanced);
                    }
                    Arg::Pipeline(inner)
                }
            });
            *at += 1;
        }
        if func.is_none() && args.is_empty() {
            return Err(match tokens.get(*at) {
                Some(Token::Close) => TemplateReason::Unbalanced,
                _ => TemplateReason::EmptyCommand,
            });
        }
        commands.push(Command { func, args });
        if tokens.get(*at) == Some(&Token::Pipe) {
            *at += 1;
        } else {
            return Ok(commands);
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Field(String),
    Text(String),
    Word(String),
    Pipe,
    Open,
    Close,
}

fn tokenize(s: &str) -> Result<Vec<Token>, TemplateReason> {
    let mut out = Vec::new();
    let mut chars = s.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '|' => {
                chars.next();
                out.push(Token::Pipe);
            }
            '(' => {
                chars.next();
                out.push(Token::Open);
            }
            ')' => {
                chars.next();
                out.push(Token::Close);
            }
            '"' | '`' => {
                chars.next();
                let mut text = String::new();
                let mut closed = false;
                while let Some((_, d)) = chars.next() {
                    if d == c {
                        closed = true;
                        break;
                    }
                    if d == '\\' && c == '"' {
                        match chars.next() {
                            Some((_, 'n')) => text.push('\n'),
                            Some((_, 't')) => text.push('\t'),
                            Some((_, e)) => text.push(e),
                            None => break,
                        }
                        continue;
                    }
                    text.push(d);
                }
                if !closed {
                    return Err(TemplateReason::UnterminatedString { at: i + 1 });
                }
                out.push(Token::Text(text));
            }
            _ => {
                let start = i;
                let mut end = s.len();
                while let Some(&(j, d)) = chars.peek() {
                    if d.is_whitespace() || matches!(d, '|' | '"' | '`' | '(' | ')') {
                        end = j;
                        break;
                    }
                    chars.next();
                }
                let word = &s[start..end];
                match word.strip_prefix('.') {
                    Some(f) if !f.is_empty() => out.push(Token::Field(f.to_owned())),
                    Some(_) => {
                        return Err(TemplateReason::LoneDot);
                    }
                    None => out.push(Token::Word(word.to_owned())),
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_read_as_the_messages_users_know() {
        for (template, want) in [
            ("{{ .Name", "`{{` without `}}`"),
            ("a }}", "`}}` without `{{`"),
            ("{{ }}", "empty action `{{ }}`"),
            ("{{ lower }}", "`lower` takes 1 argument, got 0"),
            ("{{ index .Labels }}", "`index` takes 2 arguments, got 1"),
            (
                "{{ lower .Labels }}",
                "`lower` needs text, not .Labels (use index .Labels \"key\")",
            ),
        ] {
            let e = Template::parse(template).expect_err(template);
            assert_eq!(e.reason.to_string(), want, "{template}");
        }
    }

    fn model<'a>(labels: &'a BTreeMap<String, String>) -> Model<'a> {
        Model {
            name: "web-shop",
            container_name: "shop_web_1",
            project: "shop",
            service: "web",
            domain: "example.com",
            labels: Some(labels),
        }
    }

    #[test]
    fn renders_traefik_default_and_compose_fields() {
        let labels: BTreeMap<String, String> = [("team".to_owned(), "blue".to_owned())].into();
        let m = model(&labels);
        let cases = [
            ("Host(`{{ normalize .Name }}`)", "Host(`web-shop`)"),
            (
                "Host(`{{ .Service }}.{{ .Domain }}`)",
                "Host(`web.example.com`)",
            ),
            (
                "Host(`{{ .ContainerName | normalize }}.local`)",
                "Host(`shop-web-1.local`)",
            ),
            (
                "Host(`{{ index .Labels \"team\" }}.{{.Project}}`)",
                "Host(`blue.shop`)",
            ),
            ("Host(`{{ index .Labels \"missing\" }}x`)", "Host(`x`)"),
            ("Host(`{{ .Service | upper | lower }}`)", "Host(`web`)"),
            ("Host(`{{ trimPrefix \"web\" .Name }}`)", "Host(`-shop`)"),
            (
                "Host(`{{ .Name | replace \"-\" \".\" }}`)",
                "Host(`web.shop`)",
            ),
            (
                "Host(`{{ default \"none\" .Domain }}`)",
                "Host(`example.com`)",
            ),
            ("PathPrefix(`/`)", "PathPrefix(`/`)"),
            (
                "Host(`{{ lower (trimPrefix `/` .ContainerName )}}.x`)",
                "Host(`shop_web_1.x`)",
            ),
            (
                "Host(`{{ (index .Labels \"team\") | upper }}`)",
                "Host(`BLUE`)",
            ),
            (
                "Host(`{{ default (normalize .ContainerName) (index .Labels \"host\") }}`)",
                "Host(`shop-web-1`)",
            ),
            (
                "Host(`{{ replace \"_\" \"-\" (trimSuffix \"_1\" (lower .ContainerName)) }}`)",
                "Host(`shop-web`)",
            ),
            (
                "Host(`{{ trimAll \"-\" .Name | title }}`)",
                "Host(`Web-Shop`)",
            ),
            ("Host(`{{ ucfirst .Service }}`)", "Host(`Web`)"),
        ];
        for (t, want) in cases {
            let tpl = Template::parse(t).unwrap_or_else(|e| panic!("{t}: {e}"));
            assert_eq!(tpl.render(&m).unwrap(), want, "{t}");
        }
    }

    #[test]
    fn mistakes_are_reported_at_parse() {
        for (t, needle) in [
            ("Host(`{{ .Nmae }}`)", "unknown field `.Nmae`"),
            (
                "Host(`{{ normalise .Name }}`)",
                "unknown function `normalise`",
            ),
            ("Host(`{{ .Name `)", "without `}}`"),
            ("Host(`{{ }}`)", "empty action"),
            ("Host(`{{ index .Labels }}`)", "takes 2 arguments"),
            ("Host(`{{ .Labels }}`)", "map"),
            ("Host(`{{ \"x }}`)", "unterminated"),
            ("Host(`{{ .Name .Service }}`)", "one value"),
            ("Host(`{{ lower (.Name }}`)", "unbalanced"),
            ("Host(`{{ lower .Name) }}`)", "unbalanced"),
            ("Host(`{{ lower () }}`)", "empty parentheses"),
            ("Host(`{{ .Name | }}`)", "empty command"),
            (
                "Host(`{{ lower (trimPrefix .Name) }}`)",
                "takes 2 arguments",
            ),
            (
                "Host(`{{ lower (nope .Name) }}`)",
                "unknown function `nope`",
            ),
        ] {
            let e = Template::parse(t).expect_err(t);
            assert!(e.to_string().contains(needle), "{t}: {e}");
        }
    }

    #[test]
    fn normalize_matches_traefik() {
        assert_eq!(normalize("/my_app.1"), "my-app-1");
        assert_eq!(normalize("web_shop"), "web-shop");
        assert_eq!(normalize("--a--b--"), "a-b");
        assert_eq!(normalize("été"), "été");
    }
}
