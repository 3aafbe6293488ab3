use super::*;

fn env(name: &str) -> Option<String> {
    match name {
        "DOMAIN" => Some("Example.COM".to_owned()),
        "HOSTS" => Some("a.test,b.test".to_owned()),
        "USER" => Some("admin".to_owned()),
        _ => None,
    }
}

fn run(text: &str) -> Result<String, TemplateError> {
    render(text, &env)
}

fn ok(text: &str) -> String {
    run(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

#[test]
fn what_traefik_files_write_renders_as_go_renders_it() {
    let cases = [
        // The corpus' own shapes.
        (
            r#"rule: 'Host(`traefik.{{env "DOMAIN"}}`)'"#,
            "rule: 'Host(`traefik.Example.COM`)'",
        ),
        (
            r#"address: "http://authelia:9091/api/verify?rd=https://authelia.{{env "DOMAIN"}}""#,
            r#"address: "http://authelia:9091/api/verify?rd=https://authelia.Example.COM""#,
        ),
        // Pipelines and sprig's argument order.
        (r#"{{ env "DOMAIN" | lower }}"#, "example.com"),
        (r#"{{ env "NOPE" | default "localhost" }}"#, "localhost"),
        (r#"{{ "/app" | trimPrefix "/" | upper }}"#, "APP"),
        (
            r#"{{ replace "." "-" (env "DOMAIN" | lower) }}"#,
            "example-com",
        ),
        (r#"{{ normalize "my_app.v2" }}"#, "my-app-v2"),
        (r#"{{ printf "%s:%d" "x" 8080 }}"#, "x:8080"),
        (r#"{{ quote "a" }}"#, r#""a""#),
        // Blocks, variables, trimming, comments.
        (
            r#"{{ range $i, $h := split (env "HOSTS") "," }}{{ if $i }} || {{ end }}Host(`{{ $h }}`){{ end }}"#,
            "Host(`a.test`) || Host(`b.test`)",
        ),
        (
            "{{ range splitList \",\" (env \"HOSTS\") -}}\n  - {{ . }}\n{{ end -}}",
            "- a.test\n- b.test\n",
        ),
        (
            r#"{{ $d := env "DOMAIN" | lower }}{{ if eq $d "example.com" }}yes{{ else if $d }}other{{ else }}none{{ end }}"#,
            "yes",
        ),
        (
            r#"{{ with env "USER" }}user={{ . }}{{ else }}anon{{ end }}"#,
            "user=admin",
        ),
        (
            r#"{{ with env "NOPE" }}user={{ . }}{{ else }}anon{{ end }}"#,
            "anon",
        ),
        (r#"{{ range list }}x{{ else }}empty{{ end }}"#, "empty"),
        (r#"{{ range 3 }}{{ . }}{{ end }}"#, "012"),
        (
            r#"{{ range $k, $v := dict "b" 2 "a" 1 }}{{ $k }}={{ $v }};{{ end }}"#,
            "a=1;b=2;",
        ),
        (
            r#"{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}"#,
            "2",
        ),
        ("a {{- /* gone */ -}} b", "ab"),
        (
            r#"{{ and 1 "" }}|{{ or "" "b" }}|{{ not 0 }}|{{ len "abc" }}"#,
            "|b|true|3",
        ),
        (r#"{{ index (dict "k" "v") "k" }}"#, "v"),
        ("no actions at all", "no actions at all"),
    ];
    for (text, want) in cases {
        assert_eq!(ok(text), want, "{text}");
    }
}

#[test]
fn mistakes_name_their_line() {
    let cases = [
        ("a\n\n{{ env \"A\" \n", 3, "without `}}`"),
        (
            "a\n{{ nosuch \"x\" }}",
            2,
            "function `nosuch` is not defined",
        ),
        ("a\nb\n{{ if true }}x", 3, "`if` without its `end`"),
        ("{{ end }}", 1, "`end` without"),
        // The corpus writes `$VAR` for an environment variable: Go refuses it.
        (
            "x\n{{env $TRAEFIK_USER}}",
            2,
            "undefined variable `$TRAEFIK_USER`",
        ),
        ("{{ .Name }}", 1, "nil data; no entry for key `Name`"),
        (
            "\n{{ lower \"a\" \"b\" }}",
            2,
            "lower: takes 1 argument, got 2",
        ),
        ("{{ \"x\" \"y\" }}", 1, "only a function takes arguments"),
        ("{{ define \"x\" }}{{ end }}", 1, "not supported"),
    ];
    for (text, line, problem) in cases {
        let e = run(text).expect_err(text);
        assert_eq!(e.line, line, "{text}: {e}");
        assert!(e.problem.contains(problem), "{text}: {e}");
    }
}

#[test]
fn a_function_in_a_branch_that_does_not_run_is_still_checked() {
    let e = run("{{ if false }}{{ lowr \"A\" }}{{ end }}").unwrap_err();
    assert!(e.problem.contains("lowr"), "{e}");
}

#[test]
fn quotes_inside_an_action_do_not_close_it() {
    assert_eq!(ok(r#"{{ "}}" }}"#), "}}");
    assert_eq!(ok("{{ `a}}b` }}"), "a}}b");
}

#[test]
fn text_outside_ascii_inside_an_action_is_read_not_cut() {
    // A byte-wise scan for `}}` once sliced the text inside a character.
    assert_eq!(ok(r#"{{ "Ȳé" }}-{{ "x" }}"#), "Ȳé-x");
    assert!(run("{{ Ȳ index .Labels }}").is_err());
    assert!(run("{{ \"Ȳ").is_err());
}
