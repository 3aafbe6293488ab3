//! The documentation agrees with the program and with itself: the option
//! tables in docs/ list exactly the options `gangway --help` prints, with
//! the same defaults; every relative link in README.md and docs/ leads to
//! a file (and heading) that exists; and the README's test command is the
//! one CI runs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository's root.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// A page's path from the repository's root, for messages.
fn relative(page: &Path) -> String {
    page.strip_prefix(root())
        .unwrap_or(page)
        .display()
        .to_string()
}

/// README.md and every page under docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("a docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// Option path → default, as `gangway --help` prints them ("none" when it
/// has none). `--version` is an action, not an option, and is left out.
fn help_options() -> BTreeMap<String, String> {
    let out = Command::new(env!("CARGO_BIN_EXE_gangway"))
        .arg("--help")
        .output()
        .expect("run gangway --help");
    assert!(out.status.success(), "gangway --help exits 0");
    let text = String::from_utf8(out.stdout).expect("--help prints UTF-8");
    let lines: Vec<&str> = text.lines().collect();
    let mut options = BTreeMap::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(flag) = line.strip_prefix("  --") else {
            continue;
        };
        // `--a.b=TEXT`, `--a.b[=BOOL]`, `--a.list[n].c=TEXT`.
        let name = flag.split('=').next().unwrap_or_default().trim();
        let name = name.strip_suffix('[').unwrap_or(name);
        if name == "version" {
            continue;
        }
        let description = lines.get(i + 1).copied().unwrap_or_default();
        let default = description
            .rsplit_once("[default: ")
            .and_then(|(_, d)| d.strip_suffix(']'))
            .unwrap_or("none");
        options.insert(name.to_owned(), default.to_owned());
    }
    options
}

/// Splits a table row into its cells; `\|` inside a cell is not a border.
fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut out = vec![String::new()];
    let mut escaped = false;
    for c in inner.chars() {
        match c {
            '|' if !escaped => out.push(String::new()),
            _ => out.last_mut().expect("one cell at least").push(c),
        }
        escaped = c == '\\';
    }
    out.into_iter().map(|c| c.trim().to_owned()).collect()
}

/// A cell's text without the code span around it: `` `x` `` and
/// ``` ``x`` ``` are `x`.
fn unquote(cell: &str) -> &str {
    let cell = cell.trim();
    for fence in ["``", "`"] {
        if let Some(inner) = cell.strip_prefix(fence).and_then(|c| c.strip_suffix(fence)) {
            return inner.trim();
        }
    }
    cell
}

/// The rows of every `| option | default | meaning |` table of a page:
/// (line number, option, default).
fn option_rows(text: &str) -> Vec<(usize, String, String)> {
    let mut rows = Vec::new();
    let mut in_table = false;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if !trimmed.starts_with('|') {
            in_table = false;
            continue;
        }
        let row = cells(trimmed);
        if row.len() >= 3 && row[0] == "option" && row[1] == "default" {
            in_table = true;
            continue;
        }
        if !in_table || row.iter().all(|c| c.chars().all(|c| c == '-' || c == ':')) {
            continue;
        }
        rows.push((
            i + 1,
            unquote(&row[0]).to_owned(),
            unquote(&row[1]).to_owned(),
        ));
    }
    rows
}

#[test]
fn the_configuration_page_lists_exactly_the_options_of_help() {
    let help = help_options();
    assert!(
        help.len() > 50,
        "--help printed {} options; is the parser still right?",
        help.len()
    );
    let page = read(&root().join("docs/configuration.md"));
    let mut documented = BTreeSet::new();
    for (line, option, _) in option_rows(&page) {
        assert!(
            documented.insert(option.clone()),
            "docs/configuration.md:{line}: `{option}` is listed twice"
        );
    }
    let missing: Vec<&String> = help.keys().filter(|o| !documented.contains(*o)).collect();
    let unknown: Vec<&String> = documented
        .iter()
        .filter(|o| !help.contains_key(*o))
        .collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/configuration.md and `gangway --help` disagree.\n\
         in --help but not in the page: {missing:?}\n\
         in the page but unknown to --help: {unknown:?}"
    );
}

#[test]
fn every_option_table_in_the_docs_agrees_with_help_on_names_and_defaults() {
    let help = help_options();
    let mut problems = Vec::new();
    let mut rows = 0;
    for page in pages() {
        let name = relative(&page);
        for (line, option, default) in option_rows(&read(&page)) {
            rows += 1;
            match help.get(&option) {
                None => problems.push(format!("{name}:{line}: `{option}` is unknown to --help")),
                Some(expected) if *expected != default => problems.push(format!(
                    "{name}:{line}: `{option}` defaults to `{expected}` in --help, the page says `{default}`"
                )),
                Some(_) => {}
            }
        }
    }
    assert!(
        rows >= help.len(),
        "only {rows} option rows found in the docs"
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The anchor GitHub gives a heading: lower case, spaces as `-`, other
/// punctuation dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// Lines outside fenced code blocks, with their numbers.
fn prose(text: &str) -> Vec<(usize, &str)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push((i + 1, line));
        }
    }
    out
}

/// The anchors of a page's headings, numbered as GitHub numbers repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(heading);
        let n = seen.entry(base.clone()).or_default();
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of a line's inline links, `[text](target)`, outside code
/// spans.
fn link_targets(line: &str) -> Vec<String> {
    // Code spans can hold `](`; blank them out first.
    let mut plain = String::with_capacity(line.len());
    let mut in_code = false;
    for c in line.chars() {
        if c == '`' {
            in_code = !in_code;
            plain.push(' ');
        } else {
            plain.push(if in_code { ' ' } else { c });
        }
    }
    let mut out = Vec::new();
    let mut rest = plain.as_str();
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        out.push(rest[..end].trim().to_owned());
        rest = &rest[end..];
    }
    out
}

#[test]
fn relative_links_in_the_readme_and_docs_lead_somewhere() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = read(&page);
        let name = relative(&page);
        let dir = page.parent().expect("a page is in a directory");
        for (line, content) in prose(&text) {
            for target in link_targets(content) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (file, anchor) = match target.split_once('#') {
                    Some((f, a)) => (f, Some(a)),
                    None => (target.as_str(), None),
                };
                let path = if file.is_empty() {
                    page.clone()
                } else {
                    dir.join(file)
                };
                if !path.exists() {
                    broken.push(format!("{name}:{line}: `{target}`: no such file"));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if path.extension().is_some_and(|e| e == "md")
                    && !anchors(&read(&path)).contains(anchor)
                {
                    broken.push(format!(
                        "{name}:{line}: `{target}`: no heading with that anchor"
                    ));
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} relative links found");
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_readme_test_command_is_the_one_ci_runs() {
    let readme = read(&root().join("README.md"));
    assert!(
        readme.contains("## Test it\n\n```sh\nscripts/test\n```\n"),
        "README.md's \"Test it\" shows `scripts/test` alone in a code block"
    );
    let ci = read(&root().join(".ci/run"));
    let last = ci
        .lines()
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with('#'))
        .unwrap_or_default();
    assert_eq!(last, "scripts/test", ".ci/run runs the README's command");
}

#[test]
fn the_readme_stays_a_front_door() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; the manual belongs in docs/"
    );
}

#[test]
fn slugs_and_links_are_read_as_github_reads_them() {
    assert_eq!(
        slug(" Where gangway differs from Traefik, on purpose"),
        "where-gangway-differs-from-traefik-on-purpose"
    );
    assert_eq!(
        slug(" What is implicit (as in Traefik)"),
        "what-is-implicit-as-in-traefik"
    );
    assert_eq!(slug(" `gangway check`"), "gangway-check");
    assert_eq!(
        link_targets("see [a](x.md#b) and `[c](not-a-link)` and [`d`](../e/)"),
        ["x.md#b", "../e/"]
    );
    let page = "# T\n## A b\n```\n## not a heading\n```\n## A b\n";
    assert_eq!(
        anchors(page),
        BTreeSet::from(["t".to_owned(), "a-b".to_owned(), "a-b-1".to_owned()])
    );
    assert_eq!(
        cells("| `a` | ``Host(`x`)`` | x \\| y |"),
        ["`a`", "``Host(`x`)``", "x \\| y"]
    );
    assert_eq!(unquote("``Host(`x`)``"), "Host(`x`)");
}

/// The module map in docs/architecture.md names every module file of
/// `src/` and of `src/proxy/` (the hot path), and every file it names in
/// those two folders exists.
#[test]
fn the_module_map_matches_src() {
    let map = read(&root().join("docs/architecture.md"));
    let files = |dir: &str| -> BTreeSet<String> {
        std::fs::read_dir(root().join(dir))
            .expect("src folder")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".rs"))
            .collect()
    };
    let mut missing = Vec::new();
    for dir in ["src", "src/proxy"] {
        for file in files(dir) {
            if !map.contains(&format!("`{file}`")) {
                missing.push(format!("{dir}/{file}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "docs/architecture.md's module map does not name: {missing:?}"
    );
    let proxy = files("src/proxy");
    let row = map
        .lines()
        .find(|l| l.starts_with("| `proxy.rs`"))
        .expect("the module map has a row for proxy");
    let named: Vec<&str> = row
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|n| n.ends_with(".rs") && *n != "proxy.rs")
        .collect();
    for name in named {
        assert!(
            proxy.contains(name),
            "the module map names proxy/{name}, which does not exist"
        );
    }
}

/// (option, state, description) of every option `gangway --help` lists as
/// accepted from Traefik without being implemented.
fn help_accepted() -> Vec<(String, String, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_gangway"))
        .arg("--help")
        .output()
        .expect("run gangway --help");
    let text = String::from_utf8(out.stdout).expect("--help prints UTF-8");
    let lines: Vec<&str> = text.lines().collect();
    let mut rows = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let mut words = line.split_whitespace();
        let (Some(state), Some(option), None) = (words.next(), words.next(), words.next()) else {
            continue;
        };
        if !line.starts_with("  ") || !matches!(state, "inert" | "unsupported") {
            continue;
        }
        let description = lines.get(i + 1).copied().unwrap_or_default().trim();
        rows.push((option.to_owned(), state.to_owned(), description.to_owned()));
    }
    rows
}

#[test]
fn the_configuration_page_lists_every_option_accepted_without_being_implemented() {
    let help = help_accepted();
    assert!(
        help.len() > 200,
        "--help lists {} options accepted from Traefik; is the parser still right?",
        help.len()
    );
    let page = read(&root().join("docs/configuration.md"));
    let mut documented = Vec::new();
    let mut in_table = false;
    for line in page.lines() {
        let trimmed = line.trim();
        if !trimmed.starts_with('|') {
            in_table = false;
            continue;
        }
        let row = cells(trimmed);
        if row.first().map(String::as_str) == Some("Traefik option") {
            in_table = true;
            continue;
        }
        if !in_table || row.iter().all(|c| c.chars().all(|c| c == '-' || c == ':')) {
            continue;
        }
        if let [option, state, description] = row.as_slice() {
            documented.push((
                unquote(option).to_owned(),
                state.clone(),
                description.clone(),
            ));
        }
    }
    let missing: Vec<_> = help.iter().filter(|r| !documented.contains(r)).collect();
    let extra: Vec<_> = documented.iter().filter(|r| !help.contains(r)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/configuration.md and `gangway --help` disagree on the options accepted from Traefik.\n\
         in --help but not in the page: {missing:?}\n\
         in the page but not in --help: {extra:?}"
    );
}
