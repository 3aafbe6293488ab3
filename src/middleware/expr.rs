//! The small expression language of circuitBreaker's `expression` and
//! buffering's `retryExpression`: function calls with numeric arguments,
//! numbers, comparisons (`>`, `>=`, `<`, `<=`, `==`, `!=`), `&&`, `||`, `!`
//! and parentheses, e.g. `NetworkErrorRatio() > 0.5 || LatencyAtQuantileMS(50.0) > 100`.
//!
//! Parsed and type-checked at compile time against the functions the
//! middleware offers; evaluating walks the tree with no allocation.

use std::fmt;

/// A function an expression may call.
#[derive(Clone, Copy, Debug)]
pub struct Func {
    /// Its name, as written.
    pub name: &'static str,
    /// How many numeric arguments it takes.
    pub arity: usize,
    /// Whether it is a condition (`IsNetworkError()`) rather than a number.
    pub boolean: bool,
}

/// A parsed expression; evaluates to true or false.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    /// Either side.
    Or(Box<Expr>, Box<Expr>),
    /// Both sides.
    And(Box<Expr>, Box<Expr>),
    /// The opposite.
    Not(Box<Expr>),
    /// A comparison of two numbers.
    Cmp(Operand, Op, Operand),
    /// A condition function on its own.
    Cond(Call),
}

/// A number in a comparison.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A literal.
    Num(f64),
    /// A function's value.
    Call(Call),
}

/// A call: which function (index into the offered list) and its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// Index of the function in the list given to [`parse`].
    pub func: usize,
    /// Its arguments.
    pub args: Vec<f64>,
}

/// A comparison operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

/// Why an expression does not parse, with the column.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError {
    /// 1-based column.
    pub column: usize,
    /// What was expected or found.
    pub message: String,
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at column {}: {}", self.column, self.message)
    }
}

impl Expr {
    /// Evaluates with `value(func, args)` giving each call's value (a
    /// condition function returns 1.0 for true).
    pub fn eval(&self, value: &dyn Fn(usize, &[f64]) -> f64) -> bool {
        match self {
            Expr::Or(a, b) => a.eval(value) || b.eval(value),
            Expr::And(a, b) => a.eval(value) && b.eval(value),
            Expr::Not(a) => !a.eval(value),
            Expr::Cond(c) => value(c.func, &c.args) != 0.0,
            Expr::Cmp(a, op, b) => {
                let get = |o: &Operand| match o {
                    Operand::Num(n) => *n,
                    Operand::Call(c) => value(c.func, &c.args),
                };
                let (a, b) = (get(a), get(b));
                match op {
                    Op::Gt => a > b,
                    Op::Ge => a >= b,
                    Op::Lt => a < b,
                    Op::Le => a <= b,
                    Op::Eq => a == b,
                    Op::Ne => a != b,
                }
            }
        }
    }
}

/// Parses `text` against the offered functions.
pub fn parse(text: &str, funcs: &[Func]) -> Result<Expr, ExprError> {
    let mut p = Parser {
        src: text,
        pos: 0,
        funcs,
    };
    p.skip_ws();
    if p.pos >= text.len() {
        return Err(p.error("the expression is empty"));
    }
    let e = p.or()?;
    p.skip_ws();
    if p.pos < text.len() {
        return Err(p.error("unexpected text"));
    }
    Ok(e)
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    funcs: &'a [Func],
}

impl Parser<'_> {
    fn error(&self, message: impl Into<String>) -> ExprError {
        ExprError {
            column: self.src[..self.pos.min(self.src.len())].chars().count() + 1,
            message: message.into(),
        }
    }

    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn skip_ws(&mut self) {
        while self.rest().starts_with(char::is_whitespace) {
            self.pos += self.rest().chars().next().map_or(1, char::len_utf8);
        }
    }

    fn eat(&mut self, token: &str) -> bool {
        self.skip_ws();
        if self.rest().starts_with(token) {
            self.pos += token.len();
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Expr, ExprError> {
        let mut left = self.and()?;
        while self.eat("||") {
            left = Expr::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Expr, ExprError> {
        let mut left = self.unary()?;
        while self.eat("&&") {
            left = Expr::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        self.skip_ws();
        if self.rest().starts_with('!') && !self.rest().starts_with("!=") {
            self.pos += 1;
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        if self.eat("(") {
            let e = self.or()?;
            if !self.eat(")") {
                return Err(self.error("expected `)`"));
            }
            return Ok(e);
        }
        let start = self.pos;
        let left = self.operand()?;
        let op = self.op();
        match (left, op) {
            (Operand::Call(c), None) if self.funcs[c.func].boolean => Ok(Expr::Cond(c)),
            (_, None) => {
                self.pos = start;
                Err(self.error("expected a comparison such as `NetworkErrorRatio() > 0.5`"))
            }
            (left, Some(op)) => {
                let right = self.operand()?;
                for o in [&left, &right] {
                    if let Operand::Call(c) = o
                        && self.funcs[c.func].boolean
                    {
                        self.pos = start;
                        return Err(self.error(format!(
                            "`{}()` is a condition, not a number",
                            self.funcs[c.func].name
                        )));
                    }
                }
                Ok(Expr::Cmp(left, op, right))
            }
        }
    }

    fn op(&mut self) -> Option<Op> {
        for (t, op) in [
            (">=", Op::Ge),
            ("<=", Op::Le),
            ("==", Op::Eq),
            ("!=", Op::Ne),
            (">", Op::Gt),
            ("<", Op::Lt),
        ] {
            if self.eat(t) {
                return Some(op);
            }
        }
        None
    }

    fn number(&mut self) -> Option<f64> {
        self.skip_ws();
        let len = self
            .rest()
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
            .unwrap_or(self.rest().len());
        let n = self.rest()[..len].parse().ok()?;
        self.pos += len;
        Some(n)
    }

    fn operand(&mut self) -> Result<Operand, ExprError> {
        self.skip_ws();
        if let Some(n) = self.number() {
            return Ok(Operand::Num(n));
        }
        let len = self
            .rest()
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(self.rest().len());
        if len == 0 {
            return Err(self.error("expected a number or a function call"));
        }
        let name = &self.rest()[..len];
        let Some(func) = self.funcs.iter().position(|f| f.name == name) else {
            let known: Vec<String> = self.funcs.iter().map(|f| format!("{}()", f.name)).collect();
            return Err(self.error(format!(
                "unknown function `{name}` (known: {})",
                known.join(", ")
            )));
        };
        self.pos += len;
        if !self.eat("(") {
            return Err(self.error("expected `(`"));
        }
        let mut args = Vec::new();
        if !self.eat(")") {
            loop {
                let Some(n) = self.number() else {
                    return Err(self.error("expected a number argument"));
                };
                args.push(n);
                if self.eat(")") {
                    break;
                }
                if !self.eat(",") {
                    return Err(self.error("expected `,` or `)`"));
                }
            }
        }
        let f = self.funcs[func];
        if args.len() != f.arity {
            return Err(self.error(format!(
                "`{}` takes {} argument(s), not {}",
                f.name,
                f.arity,
                args.len()
            )));
        }
        Ok(Operand::Call(Call { func, args }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FUNCS: &[Func] = &[
        Func {
            name: "NetworkErrorRatio",
            arity: 0,
            boolean: false,
        },
        Func {
            name: "ResponseCodeRatio",
            arity: 4,
            boolean: false,
        },
        Func {
            name: "LatencyAtQuantileMS",
            arity: 1,
            boolean: false,
        },
        Func {
            name: "IsNetworkError",
            arity: 0,
            boolean: true,
        },
    ];

    fn eval(text: &str, values: [f64; 4]) -> bool {
        parse(text, FUNCS).expect(text).eval(&|f, _| values[f])
    }

    #[test]
    fn precedence_and_operators() {
        assert!(eval("NetworkErrorRatio() > 0.5", [0.6, 0.0, 0.0, 0.0]));
        assert!(!eval("NetworkErrorRatio() > 0.5", [0.5, 0.0, 0.0, 0.0]));
        assert!(eval("NetworkErrorRatio() >= 0.5", [0.5, 0.0, 0.0, 0.0]));
        // && binds tighter than ||.
        let e = "NetworkErrorRatio() > 0.5 || ResponseCodeRatio(500, 600, 0, 600) > 0.3 && LatencyAtQuantileMS(50.0) > 100";
        assert!(eval(e, [0.9, 0.0, 0.0, 0.0]));
        assert!(!eval(e, [0.0, 0.9, 50.0, 0.0]));
        assert!(eval(e, [0.0, 0.9, 150.0, 0.0]));
        assert!(eval(
            "(NetworkErrorRatio() > 0.5 || IsNetworkError()) && !(LatencyAtQuantileMS(99.0) == 0)",
            [0.0, 0.0, 1.0, 1.0]
        ));
        assert!(eval("2 != NetworkErrorRatio()", [1.0, 0.0, 0.0, 0.0]));
        assert!(eval(
            "LatencyAtQuantileMS(50.0) <= 10 && NetworkErrorRatio() < 1",
            [0.0, 0.0, 10.0, 0.0]
        ));
    }

    #[test]
    fn arguments_reach_the_functions() {
        let e = parse("ResponseCodeRatio(500, 600, 0, 600) > 0.25", FUNCS).expect("parses");
        assert!(e.eval(&|_, args| if args == [500.0, 600.0, 0.0, 600.0] {
            0.3
        } else {
            0.0
        }));
    }

    #[test]
    fn errors_point_at_the_problem() {
        for (text, col, what) in [
            ("", 1, "empty"),
            ("NetworkErrorRatio()", 1, "comparison"),
            ("NetworkErrorRatio() > ", 23, "number or a function"),
            ("Foo() > 1", 1, "unknown function `Foo`"),
            ("ResponseCodeRatio(1, 2) > 0", 24, "takes 4"),
            ("(NetworkErrorRatio() > 1", 25, "`)`"),
            ("NetworkErrorRatio() > 1 &&", 27, "number or a function"),
            ("IsNetworkError() > 1", 1, "condition"),
            ("NetworkErrorRatio() > 1 x", 25, "unexpected"),
        ] {
            let err = parse(text, FUNCS).expect_err(text);
            assert!(
                err.message.contains(what) && err.column == col,
                "{text}: {err}"
            );
        }
    }
}
