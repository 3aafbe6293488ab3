use std::path::Path;

use serde::Deserialize;

use super::{Format, FormatError, parse_document, parse_value};

#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
struct Outer {
    entry_points: std::collections::BTreeMap<String, Inner>,
    name: String,
}

#[derive(Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
struct Inner {
    address: String,
    forwarded_headers: bool,
}

#[test]
fn format_from_extension() {
    assert_eq!(Format::from_path(Path::new("a.toml")), Some(Format::Toml));
    assert_eq!(
        Format::from_path(Path::new("dir/a.TOML")),
        Some(Format::Toml)
    );
    assert_eq!(Format::from_path(Path::new("a.yml")), Some(Format::Yaml));
    assert_eq!(Format::from_path(Path::new("a.YaMl")), Some(Format::Yaml));
    assert_eq!(Format::from_path(Path::new("a.json")), None);
    assert_eq!(Format::from_path(Path::new("toml")), None);
    assert_eq!(Format::from_path(Path::new("")), None);
}

#[test]
fn toml_unknown_field_names_the_line() {
    let text = "name = \"x\"\n[entryPoints.web]\nadress = \":80\"\n";
    let err = parse_document::<Outer>("gangway.toml", text, Format::Toml).unwrap_err();
    assert_eq!(err.line(), Some(3));
    assert_eq!(err.name(), "gangway.toml");
    assert_eq!(
        err.to_string(),
        "gangway.toml, line 3: unknown field `adress`, expected `address` or `forwardedHeaders`"
    );
}

#[test]
fn toml_syntax_error_names_the_line() {
    let text = "name = \"x\"\n\n[entryPoints.web\n";
    let err = parse_document::<Outer>("g.toml", text, Format::Toml).unwrap_err();
    assert_eq!(err.line(), Some(3), "{err}");
    assert!(err.to_string().starts_with("g.toml, line 3: "), "{err}");
}

#[test]
fn toml_bad_type_names_the_line() {
    let text = "[entryPoints.web]\naddress = \":80\"\nforwardedHeaders = 3\n";
    let err = parse_document::<Outer>("g.toml", text, Format::Toml).unwrap_err();
    assert_eq!(err.line(), Some(3), "{err}");
}

#[test]
fn yaml_unknown_field_names_the_line() {
    let text = "name: x\nentryPoints:\n  web:\n    adress: \":80\"\n";
    let err = parse_document::<Outer>("gangway.yml", text, Format::Yaml).unwrap_err();
    assert_eq!(err.line(), Some(4), "{err}");
    let shown = err.to_string();
    assert!(shown.starts_with("gangway.yml, line 4: "), "{shown}");
    assert!(shown.contains("unknown field `adress`"), "{shown}");
    assert!(!shown.contains("column"), "{shown}");
}

#[test]
fn yaml_syntax_error_names_the_line() {
    let text = "name: x\nentryPoints:\n  web: [\n";
    let err = parse_document::<Outer>("g.yaml", text, Format::Yaml).unwrap_err();
    assert!(err.line().is_some(), "{err}");
    assert!(err.to_string().starts_with("g.yaml, line "), "{err}");
}

#[test]
fn empty_documents_are_empty_tables() {
    for (text, format) in [
        ("", Format::Toml),
        ("# nothing\n", Format::Toml),
        ("", Format::Yaml),
        ("~", Format::Yaml),
        ("---\n", Format::Yaml),
        ("# only a comment\n", Format::Yaml),
        ("null\n", Format::Yaml),
    ] {
        let doc: Outer = parse_document("x", text, format).unwrap();
        assert_eq!(doc, Outer::default(), "{text:?}");
        let value = parse_value("x", text, format).unwrap();
        assert_eq!(value, serde_json::json!({}), "{text:?}");
    }
}

#[test]
fn parse_value_gives_a_tree() {
    let toml = "[entryPoints.web]\naddress = \":80\"\n[log]\nlevel = \"DEBUG\"\n";
    let yaml = "entryPoints:\n  web:\n    address: \":80\"\nlog:\n  level: DEBUG\n";
    let expected = serde_json::json!({
        "entryPoints": {"web": {"address": ":80"}},
        "log": {"level": "DEBUG"},
    });
    assert_eq!(parse_value("t", toml, Format::Toml).unwrap(), expected);
    assert_eq!(parse_value("y", yaml, Format::Yaml).unwrap(), expected);
}

#[test]
fn errors_without_a_line() {
    let err = parse_document::<Outer>("y", "---\na: 1\n---\nb: 2\n", Format::Yaml).unwrap_err();
    assert!(err.to_string().starts_with("y"), "{err}");
    let whole = FormatError::Document {
        name: String::from("f"),
        message: String::from("bad"),
    };
    assert_eq!(whole.to_string(), "f: bad");
    assert_eq!(whole.line(), None);
    assert_eq!(whole.message(), "bad");
}

#[test]
fn hostile_input_is_an_error_not_a_panic() {
    let deep = "[".repeat(10_000);
    assert!(parse_value("d", &deep, Format::Toml).is_err());
    assert!(parse_value("d", &deep, Format::Yaml).is_err());
    let anchors = "a: &a [1]\nb: *a\nc: *zzz\n";
    assert!(parse_value("d", anchors, Format::Yaml).is_err());
    assert!(parse_value("d", "\u{0}\u{feff}", Format::Toml).is_err());
}
