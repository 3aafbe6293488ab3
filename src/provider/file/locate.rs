//! The line each router, service and middleware of a document is written
//! on, and the lines of its options, read from the document's structure:
//! TOML's spans and a YAML parser's events. Problems found later (by
//! compile) then name `file:line`.

use crate::config::format::Format;
use crate::config::problem::Section;
use crate::config::provenance::{FileLocation, ObjectDetail, ProviderDetail};
use saphyr_parser::{Event, Parser, Span};
use std::collections::BTreeMap;

/// Deeper than any real configuration; bounds the recursion on input.
const MAX_DEPTH: usize = 64;

/// Where the objects of one document are written. A document that does not
/// parse gives what was found before the error (its parse error is
/// reported by the parser that reads its content).
///
/// Beside them, the line of each servers transport, TLS options and TLS
/// store by its section and name, which no object report holds.
pub(super) fn locate(
    path: &str,
    text: &str,
    format: Format,
) -> (ProviderDetail, BTreeMap<(Section, String), usize>) {
    let mut places = Places {
        path,
        detail: ProviderDetail::default(),
        sections: BTreeMap::new(),
    };
    match format {
        Format::Toml => {
            if let Ok(root) = toml::de::DeTable::parse(text) {
                let mut keys = Vec::new();
                let lines = Lines::new(text);
                toml_table(&lines, root.get_ref(), &mut keys, &mut places);
            }
        }
        Format::Yaml => {
            // A parse error ends the walk: the parser reports errors, not progress, after one.
            let mut events = Parser::new_from_str(text).map_while(Result::ok);
            let mut keys = Vec::new();
            while let Some((event, _)) = events.next() {
                if matches!(event, Event::MappingStart(..) | Event::SequenceStart(..)) {
                    yaml_node(&event, &mut events, &mut keys, &mut places, 0);
                }
            }
        }
    }
    (places.detail, places.sections)
}

struct Places<'a> {
    path: &'a str,
    detail: ProviderDetail,
    sections: BTreeMap<(Section, String), usize>,
}

impl Places<'_> {
    /// Records that the key at `keys` is written on `line`, when it is an
    /// object (`http.<kind>.<name>`) or an option under one. The first
    /// place of a key is kept.
    fn key(&mut self, keys: &[String], line: usize) {
        if let [outer, kind, name] = keys {
            let section = match (outer.as_str(), kind.as_str()) {
                ("http", "serversTransports") => Some(Section::ServersTransport),
                ("tls", "options") => Some(Section::TlsOptions),
                ("tls", "stores") => Some(Section::TlsStore),
                ("tcp", "routers") => Some(Section::TcpRouter),
                ("tcp", "services") => Some(Section::TcpService),
                ("tcp", "middlewares") => Some(Section::TcpMiddleware),
                ("tcp", "serversTransports") => Some(Section::TcpServersTransport),
                ("udp", "routers") => Some(Section::UdpRouter),
                ("udp", "services") => Some(Section::UdpService),
                _ => None,
            };
            if let Some(section) = section {
                self.sections.entry((section, name.clone())).or_insert(line);
            }
        }
        let [outer, kind, name, options @ ..] = keys else {
            return;
        };
        let detail = &mut self.detail;
        let map: &mut BTreeMap<String, ObjectDetail> =
            match (outer.to_ascii_lowercase().as_str(), kind.as_str()) {
                ("http", "routers") => &mut detail.routers,
                ("http", "services") => &mut detail.services,
                ("http", "middlewares") => &mut detail.middlewares,
                ("tcp", "routers") => &mut detail.tcp_routers,
                ("tcp", "services") => &mut detail.tcp_services,
                ("tcp", "middlewares") => &mut detail.tcp_middlewares,
                ("udp", "routers") => &mut detail.udp_routers,
                ("udp", "services") => &mut detail.udp_services,
                _ => return,
            };
        let file = map
            .entry(name.clone())
            .or_default()
            .file
            .get_or_insert_with(|| FileLocation {
                path: self.path.to_owned(),
                line,
                options: BTreeMap::new(),
                last_good: None,
            });
        if !options.is_empty() {
            file.options
                .entry(options.join(".").to_ascii_lowercase())
                .or_insert(line);
        }
    }
}

/// The lines of a document, indexed once, so that the line of each of its
/// keys is a binary search: counting newlines from the start for every key
/// made a file of 10,000 routers take minutes to read.
struct Lines {
    /// Byte offset of each newline, in order.
    newlines: Vec<usize>,
    /// Steps taken by [`Lines::line`], for the test that keeps it
    /// logarithmic.
    #[cfg(test)]
    steps: std::cell::Cell<usize>,
}

impl Lines {
    fn new(text: &str) -> Self {
        Lines {
            newlines: text
                .bytes()
                .enumerate()
                .filter_map(|(i, b)| (b == b'\n').then_some(i))
                .collect(),
            #[cfg(test)]
            steps: std::cell::Cell::new(0),
        }
    }

    /// 1-based line of a byte offset.
    fn line(&self, offset: usize) -> usize {
        // A hand-written search rather than `partition_point`, so that the
        // test can count its steps.
        let (mut low, mut high) = (0, self.newlines.len());
        while low < high {
            #[cfg(test)]
            self.steps.set(self.steps.get() + 1);
            let middle = low + (high - low) / 2;
            if self.newlines[middle] < offset {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low + 1
    }
}

fn toml_table(
    lines: &Lines,
    table: &toml::de::DeTable<'_>,
    keys: &mut Vec<String>,
    places: &mut Places<'_>,
) {
    if keys.len() >= MAX_DEPTH {
        return;
    }
    for (key, value) in table {
        keys.push(key.get_ref().to_string());
        places.key(keys, lines.line(key.span().start));
        toml_value(lines, value.get_ref(), keys, places);
        keys.pop();
    }
}

fn toml_value(
    lines: &Lines,
    value: &toml::de::DeValue<'_>,
    keys: &mut Vec<String>,
    places: &mut Places<'_>,
) {
    match value {
        toml::de::DeValue::Table(t) => toml_table(lines, t, keys, places),
        // Array items share their array's path (`servers`), like a
        // label's `server` stands for every server.
        toml::de::DeValue::Array(items) => {
            for item in items.iter() {
                toml_value(lines, item.get_ref(), keys, places);
            }
        }
        _ => {}
    }
}

/// Walks the node that `first` starts (a mapping or a sequence) up to its
/// end event, recording each mapping key with its line.
fn yaml_node<'i>(
    first: &Event<'i>,
    events: &mut impl Iterator<Item = (Event<'i>, Span)>,
    keys: &mut Vec<String>,
    places: &mut Places<'_>,
    depth: usize,
) {
    match first {
        Event::MappingStart(..) => loop {
            let Some((key, span)) = events.next() else {
                return;
            };
            let name = match &key {
                Event::MappingEnd => return,
                Event::Scalar(value, ..) => Some(value.to_string()),
                other => {
                    // A complex key: walk past it, recording nothing.
                    skip(other, events);
                    None
                }
            };
            let Some((value, _)) = events.next() else {
                return;
            };
            match name {
                Some(name) if depth < MAX_DEPTH => {
                    keys.push(name);
                    places.key(keys, span.start.line());
                    yaml_node(&value, events, keys, places, depth + 1);
                    keys.pop();
                }
                _ => skip(&value, events),
            }
        },
        Event::SequenceStart(..) => loop {
            let Some((item, _)) = events.next() else {
                return;
            };
            if matches!(item, Event::SequenceEnd) {
                return;
            }
            if depth < MAX_DEPTH {
                yaml_node(&item, events, keys, places, depth + 1);
            } else {
                skip(&item, events);
            }
        },
        _ => {}
    }
}

/// Walks past the node `first` starts, without recursion.
fn skip<'i>(first: &Event<'i>, events: &mut impl Iterator<Item = (Event<'i>, Span)>) {
    let mut open = usize::from(matches!(
        first,
        Event::MappingStart(..) | Event::SequenceStart(..)
    ));
    while open > 0 {
        match events.next() {
            Some((Event::MappingStart(..) | Event::SequenceStart(..), _)) => open += 1,
            Some((Event::MappingEnd | Event::SequenceEnd, _)) => open -= 1,
            Some(_) => {}
            None => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(detail: &BTreeMap<String, ObjectDetail>, name: &str) -> FileLocation {
        detail[name].file.clone().expect("located")
    }

    #[test]
    fn toml_tables_keys_and_dotted_keys_have_their_lines() {
        let text = "\
[http.routers.app]
rule = \"Host(`a`)\"
middlewares = [\"auth\"]

[http.routers.app.tls]
certResolver = \"le\"

[http.services.app.loadBalancer]
[[http.services.app.loadBalancer.servers]]
url = \"http://127.0.0.1:9000\"

[http]
middlewares.auth.basicAuth.users = [\"u:p\"]
";
        let d = locate("dynamic.toml", text, Format::Toml).0;
        let app = file(&d.routers, "app");
        assert_eq!((app.path.as_str(), app.line), ("dynamic.toml", 1));
        assert_eq!(app.line_of(Some("rule")), 2);
        assert_eq!(app.line_of(Some("middlewares")), 3);
        assert_eq!(app.line_of(Some("tls.certresolver")), 6);
        assert_eq!(app.line_of(Some("tls.options")), 5, "the enclosing table");
        assert_eq!(
            app.line_of(Some("entrypoints")),
            1,
            "not written: the object"
        );
        let svc = file(&d.services, "app");
        assert_eq!(svc.line, 8);
        assert_eq!(svc.line_of(Some("loadbalancer.servers.url")), 10);
        assert_eq!(file(&d.middlewares, "auth").line, 13);
    }

    #[test]
    fn tcp_and_udp_objects_have_their_lines_too() {
        let text = "\
[tcp.routers.db]
rule = \"HostSNI(`*`)\"
service = \"db\"
[[tcp.services.db.loadBalancer.servers]]
address = \"127.0.0.1:5432\"
[tcp.middlewares.local.ipAllowList]
sourceRange = [\"127.0.0.1\"]
[udp.routers.dns]
service = \"dns\"
[[udp.services.dns.loadBalancer.servers]]
address = \"127.0.0.1:53\"
";
        let d = locate("dynamic.toml", text, Format::Toml).0;
        let db = file(&d.tcp_routers, "db");
        assert_eq!((db.line, db.line_of(Some("service"))), (1, 3));
        let svc = file(&d.tcp_services, "db");
        assert_eq!(svc.line_of(Some("loadbalancer.servers.address")), 5);
        assert_eq!(file(&d.tcp_middlewares, "local").line, 6);
        assert_eq!(file(&d.udp_routers, "dns").line_of(Some("service")), 9);
        assert_eq!(file(&d.udp_services, "dns").line, 10);
        assert!(d.routers.is_empty(), "no HTTP object: {:?}", d.routers);
    }

    #[test]
    fn yaml_keys_have_their_lines_in_block_and_flow_style() {
        let text = "\
# routers first
http:
  routers:
    app:
      rule: Host(`a`)
      middlewares:
        - auth
      tls: {certResolver: le}
  middlewares:
    auth: {basicAuth: {users: [\"u:p\"]}}
  services:
    app:
      loadBalancer:
        servers:
          - url: http://127.0.0.1:9000
";
        let d = locate("dynamic.yml", text, Format::Yaml).0;
        let app = file(&d.routers, "app");
        assert_eq!(app.line, 4);
        assert_eq!(app.line_of(Some("rule")), 5);
        assert_eq!(app.line_of(Some("middlewares")), 6);
        assert_eq!(app.line_of(Some("tls.certresolver")), 8);
        assert_eq!(file(&d.middlewares, "auth").line, 10);
        let svc = file(&d.services, "app");
        assert_eq!(svc.line, 12);
        assert_eq!(svc.line_of(Some("loadbalancer.servers.url")), 15);
    }

    #[test]
    fn a_broken_or_foreign_document_locates_nothing_and_does_not_fail() {
        assert!(
            locate("x.toml", "[http.routers.app\n", Format::Toml)
                .0
                .routers
                .is_empty()
        );
        let d = locate("x.yml", "http:\n  routers:\n    app: [\n", Format::Yaml).0;
        assert!(d.services.is_empty());
        let deep = format!("{}1{}", "[".repeat(500), "]".repeat(500));
        assert!(locate("x.yml", &deep, Format::Yaml).0.routers.is_empty());
    }

    #[test]
    fn the_line_of_an_offset_is_a_search_not_a_count() {
        let text: String = (0..10_000)
            .map(|i| format!("[http.routers.r{i}]\nrule = \"Host(`h{i}`)\"\n"))
            .collect();
        let lines = Lines::new(&text);
        // Every offset's line agrees with counting the newlines before it.
        let mut line = 1;
        for (offset, byte) in text.bytes().enumerate() {
            assert_eq!(lines.line(offset), line, "offset {offset}");
            if byte == b'\n' {
                line += 1;
            }
        }
        assert_eq!(lines.line(text.len()), line);
        // A lookup costs about log2(20,000) steps, whatever the offset:
        // counting from the start would cost the offset itself.
        lines.steps.set(0);
        let keys = 20_000;
        for k in 0..keys {
            lines.line(k * text.len() / keys);
        }
        assert!(
            lines.steps.get() <= keys * 16,
            "{} steps for {keys} lookups",
            lines.steps.get()
        );
    }
}
