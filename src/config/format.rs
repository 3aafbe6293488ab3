//! TOML and YAML documents, parsed with errors that name the document and
//! the line, so a user can go straight to the mistake.

use std::path::Path;

use serde::de::DeserializeOwned;

#[cfg(test)]
mod tests;

/// The syntax of a configuration document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Format {
    /// TOML, from a `.toml` file.
    Toml,
    /// YAML, from a `.yml` or `.yaml` file.
    Yaml,
}

impl Format {
    /// The format a file's extension announces: `.toml`, `.yml` or `.yaml`,
    /// in any case; `None` for anything else.
    pub fn from_path(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "toml" => Some(Format::Toml),
            "yml" | "yaml" => Some(Format::Yaml),
            _ => None,
        }
    }

    /// The format's usual name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::Toml => "TOML",
            Format::Yaml => "YAML",
        }
    }
}

/// A document that could not be parsed or did not fit the expected shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    /// The parser pointed at a line.
    #[error("{name}, line {line}: {message}")]
    AtLine {
        /// The document's name, usually its file name.
        name: String,
        /// The 1-based line the problem is on.
        line: usize,
        /// What is wrong, without the location.
        message: String,
    },
    /// The problem concerns the document as a whole.
    #[error("{name}: {message}")]
    Document {
        /// The document's name, usually its file name.
        name: String,
        /// What is wrong.
        message: String,
    },
}

impl FormatError {
    fn new(name: &str, line: Option<usize>, message: String) -> FormatError {
        match line {
            Some(line) => FormatError::AtLine {
                name: name.to_owned(),
                line,
                message,
            },
            None => FormatError::Document {
                name: name.to_owned(),
                message,
            },
        }
    }

    /// The 1-based line of the problem, when the parser knew it.
    pub fn line(&self) -> Option<usize> {
        match self {
            FormatError::AtLine { line, .. } => Some(*line),
            FormatError::Document { .. } => None,
        }
    }

    /// What is wrong, without the document's name or the line.
    pub fn message(&self) -> &str {
        match self {
            FormatError::AtLine { message, .. } | FormatError::Document { message, .. } => message,
        }
    }

    /// The name of the document, as passed to the parser.
    pub fn name(&self) -> &str {
        match self {
            FormatError::AtLine { name, .. } | FormatError::Document { name, .. } => name,
        }
    }
}

/// 1-based line of a byte offset into `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()
        .get(..end)
        .map_or(0, |before| before.iter().filter(|&&b| b == b'\n').count())
        + 1
}

fn toml_error(name: &str, text: &str, err: &toml::de::Error) -> FormatError {
    let line = err.span().map(|span| line_of(text, span.start));
    FormatError::new(name, line, err.message().trim_end().to_owned())
}

fn yaml_error(name: &str, err: &serde_yaml::Error) -> FormatError {
    let full = err.to_string();
    let Some(location) = err.location() else {
        return FormatError::new(name, None, full);
    };
    // serde_yaml appends the position to its message; the line goes in
    // front instead, so drop the first copy of it from the text.
    let suffix = format!(" at line {} column {}", location.line(), location.column());
    let message = full.replacen(&suffix, "", 1);
    FormatError::new(name, Some(location.line()), message)
}

/// Whether a YAML document holds nothing: no text, only comments, or `~`.
fn yaml_is_empty(name: &str, text: &str) -> Result<bool, FormatError> {
    let tree: serde_yaml::Value = serde_yaml::from_str(text).map_err(|e| yaml_error(name, &e))?;
    Ok(tree.is_null())
}

/// Parses `text` as a `format` document into `T`.
///
/// `name` (usually the file name) starts every error message, followed by
/// the line when the parser knows it: ``gangway.toml, line 3: unknown field
/// `adress`, expected one of `address`, ...``. An empty document (no text,
/// only comments, or YAML `~`) reads as an empty table, so a `T` whose fields
/// all have defaults comes out as its defaults.
pub fn parse_document<T: DeserializeOwned>(
    name: &str,
    text: &str,
    format: Format,
) -> Result<T, FormatError> {
    match format {
        Format::Toml => toml::from_str(text).map_err(|e| toml_error(name, text, &e)),
        Format::Yaml => {
            if yaml_is_empty(name, text)? {
                let empty = serde_yaml::Value::Mapping(serde_yaml::Mapping::new());
                serde_yaml::from_value(empty).map_err(|e| yaml_error(name, &e))
            } else {
                // Deserializing from the text rather than from a parsed tree
                // keeps the positions for errors.
                serde_yaml::from_str(text).map_err(|e| yaml_error(name, &e))
            }
        }
    }
}

/// Parses `text` as a `format` document into a generic tree.
///
/// An empty document gives an empty object. Errors are as for
/// [`parse_document`].
pub fn parse_value(
    name: &str,
    text: &str,
    format: Format,
) -> Result<serde_json::Value, FormatError> {
    let value: serde_json::Value = parse_document(name, text, format)?;
    Ok(if value.is_null() {
        serde_json::Value::Object(serde_json::Map::new())
    } else {
        value
    })
}
