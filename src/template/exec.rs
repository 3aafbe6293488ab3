//! Running a parsed template: `.` and `$` are the data, variables live in
//! the block that declares them, and each pipeline's value is handed on
//! as the last argument of its next command.

use super::parse::{Node, Operand, Pipeline, Template};
use super::{Env, TemplateError, Value, funcs};

impl Template {
    /// Runs the template with `data` as `.` and `$`, reading environment
    /// variables through `env`.
    pub fn render(&self, data: &Value, env: Env<'_>) -> Result<String, TemplateError> {
        self.render_with(data, env, &Value::Nil)
    }

    /// As `render`, with `missing` the value of a key a map does not have
    /// (Go's `missingkey=zero` for a map of text, `""`; `render` gives nil,
    /// printed `<no value>`, as for Go's untyped maps).
    pub fn render_with(
        &self,
        data: &Value,
        env: Env<'_>,
        missing: &Value,
    ) -> Result<String, TemplateError> {
        let mut run = Run {
            missing,
            vars: Vec::new(),
            root: data.clone(),
            env,
            out: String::new(),
        };
        run.nodes(&self.nodes, data)?;
        Ok(run.out)
    }
}

struct Run<'a> {
    /// Variables in scope, innermost last.
    vars: Vec<(String, Value)>,
    root: Value,
    env: Env<'a>,
    /// What a key a map does not have gives.
    missing: &'a Value,
    out: String,
}

fn fail(line: usize, problem: impl Into<String>) -> TemplateError {
    TemplateError {
        line,
        problem: problem.into(),
    }
}

impl Run<'_> {
    fn nodes(&mut self, nodes: &[Node], dot: &Value) -> Result<(), TemplateError> {
        for node in nodes {
            match node {
                Node::Text(text) => self.out.push_str(text),
                Node::Action { pipe, line } => {
                    let value = self.pipeline(pipe, dot, *line)?;
                    if pipe.vars.is_empty() {
                        self.write(&value);
                    }
                }
                Node::If {
                    pipe,
                    then,
                    otherwise,
                    line,
                } => {
                    let mark = self.vars.len();
                    let value = self.pipeline(pipe, dot, *line)?;
                    let branch = if value.truthy() { then } else { otherwise };
                    self.nodes(branch, dot)?;
                    self.vars.truncate(mark);
                }
                Node::With {
                    pipe,
                    then,
                    otherwise,
                    line,
                } => {
                    let mark = self.vars.len();
                    let value = self.pipeline(pipe, dot, *line)?;
                    if value.truthy() {
                        self.nodes(then, &value)?;
                    } else {
                        self.nodes(otherwise, dot)?;
                    }
                    self.vars.truncate(mark);
                }
                Node::Range {
                    pipe,
                    body,
                    otherwise,
                    line,
                } => self.range(pipe, body, otherwise, dot, *line)?,
            }
        }
        Ok(())
    }

    fn write(&mut self, value: &Value) {
        use std::fmt::Write as _;
        let _ = write!(self.out, "{value}");
    }

    fn range(
        &mut self,
        pipe: &Pipeline,
        body: &[Node],
        otherwise: &[Node],
        dot: &Value,
        line: usize,
    ) -> Result<(), TemplateError> {
        let mark = self.vars.len();
        // The variables are the element's, not the whole value's.
        let bare = Pipeline {
            vars: Vec::new(),
            assign: false,
            commands: pipe.commands.clone(),
        };
        let value = self.pipeline(&bare, dot, line)?;
        let items: Vec<(Value, Value)> = match value {
            Value::Nil => Vec::new(),
            Value::List(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Value::Int(i64::try_from(i).unwrap_or(i64::MAX)), v))
                .collect(),
            Value::Map(map) => map.into_iter().map(|(k, v)| (Value::Str(k), v)).collect(),
            Value::Int(n) => {
                if pipe.vars.len() > 1 {
                    return Err(fail(line, "range over a number declares one variable"));
                }
                (0..n.max(0))
                    .map(|i| (Value::Int(i), Value::Int(i)))
                    .collect()
            }
            other => {
                return Err(fail(
                    line,
                    format!("range can't iterate over {other} ({})", other.kind()),
                ));
            }
        };
        if items.is_empty() {
            self.nodes(otherwise, dot)?;
            return Ok(());
        }
        for (key, item) in items {
            match pipe.vars.as_slice() {
                [] => {}
                [one] => self.vars.push((one.clone(), item.clone())),
                [k, v, ..] => {
                    self.vars.push((k.clone(), key));
                    self.vars.push((v.clone(), item.clone()));
                }
            }
            self.nodes(body, &item)?;
            self.vars.truncate(mark);
        }
        Ok(())
    }

    fn pipeline(
        &mut self,
        pipe: &Pipeline,
        dot: &Value,
        line: usize,
    ) -> Result<Value, TemplateError> {
        let mut value: Option<Value> = None;
        for command in &pipe.commands {
            value = Some(self.command(command, dot, value, line)?);
        }
        let value = value.unwrap_or(Value::Nil);
        if let Some(name) = pipe.vars.first() {
            if pipe.assign {
                let Some(slot) = self.vars.iter_mut().rev().find(|(n, _)| n == name) else {
                    return Err(fail(line, format!("undefined variable `${name}`")));
                };
                slot.1 = value.clone();
            } else {
                self.vars.push((name.clone(), value.clone()));
            }
        }
        Ok(value)
    }

    fn command(
        &mut self,
        command: &[Operand],
        dot: &Value,
        piped: Option<Value>,
        line: usize,
    ) -> Result<Value, TemplateError> {
        if let Some(Operand::Func(name)) = command.first() {
            let mut args = Vec::with_capacity(command.len());
            for operand in &command[1..] {
                args.push(self.operand(operand, dot, line)?);
            }
            args.extend(piped);
            return funcs::call(name, args, self.env, self.missing)
                .map_err(|problem| fail(line, format!("{name}: {problem}")));
        }
        if command.len() > 1 || piped.is_some() {
            return Err(fail(line, "only a function takes arguments"));
        }
        match command.first() {
            Some(operand) => self.operand(operand, dot, line),
            None => Ok(Value::Nil),
        }
    }

    fn operand(
        &mut self,
        operand: &Operand,
        dot: &Value,
        line: usize,
    ) -> Result<Value, TemplateError> {
        match operand {
            Operand::Field(path) => walk(dot, path, line, self.missing),
            Operand::Var(name, path) => {
                let value = if name.is_empty() {
                    self.root.clone()
                } else {
                    match self.vars.iter().rev().find(|(n, _)| n == name) {
                        Some((_, v)) => v.clone(),
                        None => return Err(fail(line, format!("undefined variable `${name}`"))),
                    }
                };
                walk(&value, path, line, self.missing)
            }
            Operand::Literal(v) => Ok(v.clone()),
            Operand::Func(name) => funcs::call(name, Vec::new(), self.env, self.missing)
                .map_err(|problem| fail(line, format!("{name}: {problem}"))),
            Operand::Sub(pipe, path) => {
                let value = self.pipeline(pipe, dot, line)?;
                walk(&value, path, line, self.missing)
            }
        }
    }
}

/// `.A.B` from `value`.
fn walk(
    value: &Value,
    path: &[String],
    line: usize,
    missing: &Value,
) -> Result<Value, TemplateError> {
    let mut current = value.clone();
    for field in path {
        current = match current {
            Value::Map(mut map) => map.remove(field).unwrap_or_else(|| missing.clone()),
            Value::Nil => {
                return Err(fail(line, format!("nil data; no entry for key `{field}`")));
            }
            other => {
                return Err(fail(
                    line,
                    format!("can't evaluate field `{field}` in {}", other.kind()),
                ));
            }
        };
    }
    Ok(current)
}
