use super::*;
use crate::config::static_config::{DnsChallenge, Propagation};
use std::collections::HashMap;

fn lookup(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |k: &str| map.get(k).cloned()
}

fn challenge(provider: &str) -> DnsChallenge {
    DnsChallenge {
        provider: provider.to_owned(),
        resolvers: vec!["127.0.0.1:5353".to_owned()],
        propagation: Propagation::default(),
        ..DnsChallenge::default()
    }
}

#[test]
fn the_record_is_named_after_the_base_domain() {
    assert_eq!(challenge_fqdn("apps.test"), "_acme-challenge.apps.test.");
    assert_eq!(challenge_fqdn("*.apps.test"), "_acme-challenge.apps.test.");
    assert_eq!(
        challenge_fqdn("www.apps.test."),
        "_acme-challenge.www.apps.test."
    );
}

#[test]
fn the_txt_value_is_the_base64url_sha256_of_the_key_authorization() {
    // RFC 8555 §8.4's construction, computed independently: SHA-256 of
    // "token.thumb" = the bytes below.
    let value = txt_value("evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.thumb");
    assert_eq!(value.len(), 43, "32 bytes in unpadded base64url");
    assert!(!value.contains(['+', '/', '=']));
    let again = txt_value("evaGxfADs6pSRb2LAv9IZf17Dt3juxGJ-PCt92wr-oA.thumb");
    assert_eq!(value, again);
    assert_ne!(value, txt_value("other.thumb"));
    // A known vector: SHA-256("abc") in base64url.
    assert_eq!(
        txt_value("abc"),
        "ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0"
    );
}

#[test]
fn providers_are_built_from_environment_variables() {
    let vars = [
        ("RFC2136_NAMESERVER", "127.0.0.1:5353"),
        ("RFC2136_TSIG_KEY", "gangway-key"),
        ("RFC2136_TSIG_SECRET", "c2VjcmV0c2VjcmV0c2VjcmV0"),
        ("RFC2136_PROPAGATION_TIMEOUT", "30"),
    ];
    let solver = Solver::new("le", &challenge("rfc2136"), &lookup(&vars)).unwrap();
    assert_eq!(solver.provider_name(), "rfc2136");
    assert_eq!(solver.checks.timeout, Duration::from_secs(30));
    assert_eq!(solver.checks.resolvers, ["127.0.0.1:5353".parse().unwrap()]);
    // The secret never shows in Debug.
    assert!(!format!("{solver:?}").contains("c2VjcmV0"));

    let exec = Solver::new(
        "le",
        &challenge("exec"),
        &lookup(&[("EXEC_PATH", "/bin/true")]),
    );
    assert_eq!(exec.unwrap().provider_name(), "exec");
    let http = Solver::new(
        "le",
        &challenge("httpreq"),
        &lookup(&[("HTTPREQ_ENDPOINT", "http://127.0.0.1:9/dns")]),
    );
    assert_eq!(http.unwrap().provider_name(), "httpreq");
}

#[test]
fn missing_variables_are_all_named() {
    let err = Solver::new("le", &challenge("rfc2136"), &lookup(&[])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "certificatesResolvers.le.acme.dnsChallenge: provider `rfc2136` needs the environment \
         variable RFC2136_NAMESERVER (or RFC2136_NAMESERVER_FILE naming a file that holds it)"
    );
    let half = [
        ("RFC2136_NAMESERVER", "127.0.0.1"),
        ("RFC2136_TSIG_KEY", "k"),
    ];
    let err = Solver::new("le", &challenge("rfc2136"), &lookup(&half)).unwrap_err();
    assert!(
        matches!(&err, DnsError::MissingEnv { variables, .. } if variables == &["RFC2136_TSIG_SECRET"])
    );
    let err = Solver::new("le", &challenge("httpreq"), &lookup(&[])).unwrap_err();
    assert!(err.to_string().contains("HTTPREQ_ENDPOINT"), "{err}");
    let err = Solver::new("le", &challenge("route66"), &lookup(&[])).unwrap_err();
    assert!(matches!(err, DnsError::UnknownProvider { .. }));
}

#[tokio::test]
async fn a_start_goes_on_without_credentials_and_each_order_says_why() {
    // As Traefik: a DNS provider's missing credentials do not stop the
    // start; they fail the orders through it, with what to set.
    let (solver, reason) = Solver::for_start("le", &challenge("cloudflare"), &lookup(&[])).unwrap();
    let reason = reason.expect("the missing credentials are returned");
    assert!(reason.to_string().contains("CF_DNS_API_TOKEN"), "{reason}");
    assert_eq!(solver.provider_name(), "cloudflare");
    let solver = Arc::new(solver);
    let err = solver
        .publish("_acme-challenge.apps.test.", "v", &|_| {})
        .await
        .map(|_| ())
        .unwrap_err();
    assert_eq!(err.to_string(), reason.to_string());
    // An unknown provider still stops the start: nothing can be ordered
    // with a name gangway does not have.
    assert!(matches!(
        Solver::for_start("le", &challenge("route66"), &lookup(&[])),
        Err(DnsError::UnknownProvider { .. })
    ));
    // `check` (Solver::new) keeps reporting the credentials as an error.
    assert!(Solver::new("le", &challenge("cloudflare"), &lookup(&[])).is_err());
}

#[test]
fn file_variables_are_read_and_bad_values_are_named_without_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "not base64!\n").unwrap();
    let vars = [
        ("RFC2136_NAMESERVER", "127.0.0.1"),
        ("RFC2136_TSIG_KEY", "k"),
        ("RFC2136_TSIG_SECRET_FILE", secret.to_str().unwrap()),
    ];
    let err = Solver::new("le", &challenge("rfc2136"), &lookup(&vars)).unwrap_err();
    assert_eq!(err.to_string(), "RFC2136_TSIG_SECRET: is not base64");
    let gone = [
        ("RFC2136_NAMESERVER", "127.0.0.1"),
        ("RFC2136_TSIG_KEY", "k"),
        ("RFC2136_TSIG_SECRET_FILE", "/nonexistent/secret"),
    ];
    let err = Solver::new("le", &challenge("rfc2136"), &lookup(&gone)).unwrap_err();
    assert!(matches!(err, DnsError::EnvFile { .. }), "{err}");
    let sha1 = [
        ("RFC2136_NAMESERVER", "127.0.0.1"),
        ("RFC2136_TSIG_KEY", "k"),
        ("RFC2136_TSIG_SECRET", "c2VjcmV0"),
        ("RFC2136_TSIG_ALGORITHM", "hmac-sha1."),
    ];
    let err = Solver::new("le", &challenge("rfc2136"), &lookup(&sha1)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("RFC2136_TSIG_ALGORITHM: `hmac-sha1`"),
        "{err}"
    );
}

#[test]
fn resolvers_and_resolv_conf_are_parsed() {
    assert_eq!(parse_server("9.9.9.9"), Some("9.9.9.9:53".parse().unwrap()));
    assert_eq!(
        parse_server("127.0.0.1:5353"),
        Some("127.0.0.1:5353".parse().unwrap())
    );
    assert_eq!(
        parse_server("[::1]:5353"),
        Some("[::1]:5353".parse().unwrap())
    );
    assert_eq!(parse_server("::1"), Some("[::1]:53".parse().unwrap()));
    assert_eq!(parse_server("ns.example.com"), None);
    let mut bad = challenge("exec");
    bad.resolvers = vec!["ns.example.com".to_owned()];
    let err = Solver::new("le", &bad, &lookup(&[("EXEC_PATH", "/bin/true")])).unwrap_err();
    assert!(matches!(err, DnsError::BadResolver { .. }));
    let conf =
        "# comment\nsearch lan\nnameserver 10.0.0.1\nnameserver fe80::1%eth0\noptions ndots:1\n";
    assert_eq!(
        parse_resolv_conf(conf),
        [
            "10.0.0.1:53".parse().unwrap(),
            "[fe80::1]:53".parse().unwrap()
        ]
    );
}

#[test]
fn traefik_v2_propagation_names_are_used_when_the_v3_ones_are_not_set() {
    let env = [("EXEC_PATH", "/bin/true")];
    let mut old = challenge("exec");
    old.delay_before_check = crate::config::Duration(Duration::from_secs(5));
    old.disable_propagation_check = true;
    let solver = Solver::new("le", &old, &lookup(&env)).unwrap();
    assert_eq!(solver.checks.delay, Duration::from_secs(5));
    assert!(solver.checks.disabled);
    old.propagation.delay_before_checks = crate::config::Duration(Duration::from_secs(9));
    let solver = Solver::new("le", &old, &lookup(&env)).unwrap();
    assert_eq!(
        solver.checks.delay,
        Duration::from_secs(9),
        "the v3 name wins"
    );
}

#[test]
fn api_providers_read_lego_variables_and_name_the_missing_ones() {
    let cf = Solver::new(
        "le",
        &challenge("cloudflare"),
        &lookup(&[("CLOUDFLARE_DNS_API_TOKEN", "t0ken")]),
    )
    .unwrap();
    assert_eq!(cf.provider_name(), "cloudflare");
    // Cloudflare's documented propagation defaults.
    assert_eq!(cf.checks.timeout, Duration::from_secs(120));
    assert_eq!(cf.checks.interval, Duration::from_secs(2));
    assert!(!format!("{cf:?}").contains("t0ken"));
    let err = Solver::new("le", &challenge("cloudflare"), &lookup(&[])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "certificatesResolvers.le.acme.dnsChallenge: provider `cloudflare` needs CF_DNS_API_TOKEN \
         (with CF_ZONE_API_TOKEN if zones are read with another token), or CF_API_EMAIL and \
         CF_API_KEY (each also as <NAME>_FILE naming a file that holds it)"
    );
    let zone_only = lookup(&[("CF_ZONE_API_TOKEN", "z")]);
    let err = Solver::new("le", &challenge("cloudflare"), &zone_only).unwrap_err();
    assert!(
        matches!(&err, DnsError::MissingEnv { variables, .. } if variables == &["CF_DNS_API_TOKEN"]),
        "{err}"
    );
    let key_only = lookup(&[("CF_API_KEY", "k")]);
    let err = Solver::new("le", &challenge("cloudflare"), &key_only).unwrap_err();
    assert!(
        matches!(&err, DnsError::MissingEnv { variables, .. } if variables == &["CF_API_EMAIL"]),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("token");
    std::fs::write(&secret, "from-a-file\n").unwrap();
    let vars = [("CF_DNS_API_TOKEN_FILE", secret.to_str().unwrap())];
    let file = lookup(&vars);
    assert!(Solver::new("le", &challenge("cloudflare"), &file).is_ok());
    let bad_url = lookup(&[
        ("CF_DNS_API_TOKEN", "t"),
        ("CLOUDFLARE_BASE_URL", "ftp://example"),
    ]);
    let err = Solver::new("le", &challenge("cloudflare"), &bad_url).unwrap_err();
    assert_eq!(
        err.to_string(),
        "CLOUDFLARE_BASE_URL: `ftp://example` is not an http:// or https:// URL"
    );

    let err = Solver::new("le", &challenge("digitalocean"), &lookup(&[])).unwrap_err();
    assert!(
        matches!(&err, DnsError::MissingEnv { variables, .. } if variables == &["DO_AUTH_TOKEN"]),
        "{err}"
    );
    let good = lookup(&[
        ("DO_AUTH_TOKEN", "dop_v1_x"),
        ("DO_PROPAGATION_TIMEOUT", "90"),
    ]);
    let d = Solver::new("le", &challenge("digitalocean"), &good).unwrap();
    assert_eq!(d.checks.timeout, Duration::from_secs(90));
    assert_eq!(d.checks.interval, Duration::from_secs(5));
    let err = Solver::new("le", &challenge("gandiv5"), &lookup(&[])).unwrap_err();
    assert!(
        err.to_string()
            .contains("needs GANDIV5_PERSONAL_ACCESS_TOKEN"),
        "{err}"
    );
    let err = Solver::new("le", &challenge("route66"), &lookup(&[])).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("`route66` is not a DNS provider gangway has"),
        "{err}"
    );
    for name in [
        "cloudflare",
        "route53",
        "duckdns",
        "desec",
        "porkbun",
        "linode",
        "vultr",
        "hetzner",
        "exec",
        "httpreq",
    ] {
        assert!(text.contains(name), "the list names {name}: {err}");
    }
}

#[test]
fn zone_candidates_walk_up_the_name_and_records_are_named_relative_to_it() {
    assert_eq!(
        api::zone_candidates("_acme-challenge.www.example.co.uk."),
        [
            "_acme-challenge.www.example.co.uk",
            "www.example.co.uk",
            "example.co.uk",
            "co.uk"
        ]
    );
    assert!(api::zone_candidates("test.").is_empty());
    assert_eq!(
        api::relative("_acme-challenge.apps.test.", "apps.test"),
        "_acme-challenge"
    );
    assert_eq!(
        api::relative("_acme-challenge.a.apps.test.", "apps.test."),
        "_acme-challenge.a"
    );
    assert_eq!(api::relative("apps.test.", "apps.test"), "");
}

#[test]
fn sigv4_matches_the_published_test_vectors() {
    use route53::{Credentials, Scope, authorization};
    let suite = Credentials {
        access_key: "AKIDEXAMPLE".to_owned(),
        secret_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".to_owned(),
        session_token: None,
    };
    let scope = Scope {
        date: "20150830T123600Z",
        region: "us-east-1",
        service: "service",
    };
    let headers = [
        ("Host".to_owned(), "example.amazonaws.com".to_owned()),
        ("X-Amz-Date".to_owned(), "20150830T123600Z".to_owned()),
    ];
    let prefix = "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=";
    // get-vanilla
    assert_eq!(
        authorization(&suite, &scope, "GET", "/", &[], &headers, b""),
        format!("{prefix}5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31")
    );
    // get-vanilla-query-order-key-case: parameters are sorted.
    assert_eq!(
        authorization(
            &suite,
            &scope,
            "GET",
            "/",
            &[("Param2", "value2"), ("Param1", "value1")],
            &headers,
            b""
        ),
        format!("{prefix}b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500")
    );
    // The S3 documentation's GET Object example (more headers, a path).
    let s3 = Credentials {
        access_key: "AKIAIOSFODNN7EXAMPLE".to_owned(),
        secret_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY".to_owned(),
        session_token: None,
    };
    let headers = [
        (
            "host".to_owned(),
            "examplebucket.s3.amazonaws.com".to_owned(),
        ),
        ("range".to_owned(), "bytes=0-9".to_owned()),
        (
            "x-amz-content-sha256".to_owned(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855".to_owned(),
        ),
        ("x-amz-date".to_owned(), "20130524T000000Z".to_owned()),
    ];
    let scope = Scope {
        date: "20130524T000000Z",
        region: "us-east-1",
        service: "s3",
    };
    assert!(
        authorization(&s3, &scope, "GET", "/test.txt", &[], &headers, b"").ends_with(
            "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, \
             Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
        )
    );
    let at = |secs: u64| std::time::UNIX_EPOCH + Duration::from_secs(secs);
    assert_eq!(route53::amz_date(at(1_440_938_160)), "20150830T123600Z");
    assert_eq!(route53::amz_date(at(951_868_799)), "20000229T235959Z");
}

#[test]
fn route53_reads_static_keys_or_a_profile_of_the_shared_credentials_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("credentials");
    std::fs::write(
        &file,
        "[default]\naws_access_key_id = AKIADEFAULT\naws_secret_access_key = d3f\n\n\
         # the deploy profile\n[deploy]\naws_access_key_id=AKIADEPLOY\naws_secret_access_key=s3cr3t\n",
    )
    .unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        route53::profile_section(&text, "deploy"),
        [
            ("aws_access_key_id".to_owned(), "AKIADEPLOY".to_owned()),
            ("aws_secret_access_key".to_owned(), "s3cr3t".to_owned())
        ]
    );
    let path = file.to_str().unwrap();
    let vars = [
        ("AWS_SHARED_CREDENTIALS_FILE", path),
        ("AWS_PROFILE", "deploy"),
    ];
    let r = Solver::new("le", &challenge("route53"), &lookup(&vars)).unwrap();
    assert_eq!(r.provider_name(), "route53");
    assert_eq!(r.checks.interval, Duration::from_secs(4));
    let vars = [
        ("AWS_SHARED_CREDENTIALS_FILE", path),
        ("AWS_PROFILE", "nope"),
    ];
    let err = Solver::new("le", &challenge("route53"), &lookup(&vars)).unwrap_err();
    assert!(matches!(err, DnsError::MissingCredentials { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
        "{err}"
    );
    let vars = [
        ("AWS_ACCESS_KEY_ID", "AKIA"),
        ("AWS_SECRET_ACCESS_KEY", "x"),
        ("HOME", "/nonexistent"),
    ];
    assert!(Solver::new("le", &challenge("route53"), &lookup(&vars)).is_ok());
}

#[test]
fn ovh_signs_with_sha1_of_the_joined_parts_and_names_missing_keys() {
    // Computed independently: printf '%s' 'as+ck+GET+https://eu.api.ovh.com/1.0/auth/time++1700000000' | sha1sum
    assert_eq!(
        ovh::signature(
            "as",
            "ck",
            "GET",
            "https://eu.api.ovh.com/1.0/auth/time",
            "",
            1_700_000_000
        ),
        format!("$1${}", "e0c87d1d7f12d2a843a787dc8597b623ef62dae5")
    );
    let err = Solver::new(
        "le",
        &challenge("ovh"),
        &lookup(&[("OVH_ENDPOINT", "ovh-eu")]),
    )
    .unwrap_err();
    assert!(
        matches!(&err, DnsError::MissingEnv { variables, .. }
            if variables == &["OVH_APPLICATION_KEY", "OVH_APPLICATION_SECRET", "OVH_CONSUMER_KEY"]),
        "{err}"
    );
}

#[test]
fn desec_reads_its_token_and_keeps_its_ttl_floor() {
    let err = Solver::new("le", &challenge("desec"), &lookup(&[])).unwrap_err();
    assert!(
        matches!(&err, DnsError::MissingEnv { variables, .. } if variables == &["DESEC_TOKEN"]),
        "{err}"
    );
    let d = Solver::new(
        "le",
        &challenge("desec"),
        &lookup(&[("DESEC_TOKEN", "t0k"), ("DESEC_TTL", "60")]),
    )
    .unwrap();
    assert_eq!(d.provider_name(), "desec");
    assert_eq!(d.checks.timeout, Duration::from_secs(120));
    assert_eq!(d.checks.interval, Duration::from_secs(4));
    assert_eq!(
        desec::message(br#"{"detail": "Invalid token."}"#).as_deref(),
        Some("Invalid token.")
    );
    assert_eq!(
        desec::message(br#"{"ttl": ["Ensure this value is greater than or equal to 3600."]}"#)
            .as_deref(),
        Some("ttl: Ensure this value is greater than or equal to 3600.")
    );
}

#[test]
fn porkbun_needs_both_keys() {
    let err = Solver::new(
        "le",
        &challenge("porkbun"),
        &lookup(&[("PORKBUN_API_KEY", "pk1")]),
    )
    .unwrap_err();
    assert!(
        matches!(&err, DnsError::MissingEnv { variables, .. } if variables == &["PORKBUN_SECRET_API_KEY"]),
        "{err}"
    );
    let p = Solver::new(
        "le",
        &challenge("porkbun"),
        &lookup(&[
            ("PORKBUN_API_KEY", "pk1"),
            ("PORKBUN_SECRET_API_KEY", "sk1"),
        ]),
    )
    .unwrap();
    assert_eq!(p.checks.timeout, Duration::from_secs(600));
    assert_eq!(p.checks.interval, Duration::from_secs(10));
    assert!(!format!("{p:?}").contains("sk1"));
}

#[test]
fn linode_and_vultr_read_their_tokens_and_error_shapes() {
    for (provider, variable, timeout, interval) in [
        ("linode", "LINODE_TOKEN", 120, 15),
        ("vultr", "VULTR_API_KEY", 60, 2),
    ] {
        let err = Solver::new("le", &challenge(provider), &lookup(&[])).unwrap_err();
        assert!(
            matches!(&err, DnsError::MissingEnv { variables, .. } if variables == &[variable]),
            "{err}"
        );
        let s = Solver::new("le", &challenge(provider), &lookup(&[(variable, "t")])).unwrap();
        assert_eq!(s.checks.timeout, Duration::from_secs(timeout), "{provider}");
        assert_eq!(
            s.checks.interval,
            Duration::from_secs(interval),
            "{provider}"
        );
    }
    assert_eq!(
        linode::message(
            br#"{"errors": [{"field": "ttl_sec", "reason": "bad"}, {"reason": "Invalid Token"}]}"#
        )
        .as_deref(),
        Some("ttl_sec: bad; Invalid Token")
    );
    assert_eq!(
        vultr::message(br#"{"error": "Invalid API token.", "status": 401}"#).as_deref(),
        Some("Invalid API token.")
    );
}

#[test]
fn hetzner_takes_a_cloud_api_token_and_names_what_replaces_the_dns_console_key() {
    let err = Solver::new("le", &challenge("hetzner"), &lookup(&[])).unwrap_err();
    assert!(
        matches!(&err, DnsError::MissingEnv { variables, .. } if variables == &["HETZNER_API_TOKEN"]),
        "{err}"
    );
    let err = Solver::new(
        "le",
        &challenge("hetzner"),
        &lookup(&[("HETZNER_API_KEY", "old-s3cret")]),
    )
    .unwrap_err();
    assert!(
        matches!(&err, DnsError::BadEnv { variable, .. } if variable == "HETZNER_API_KEY"),
        "{err}"
    );
    assert!(err.to_string().contains("set HETZNER_API_TOKEN"), "{err}");
    assert!(!err.to_string().contains("old-s3cret"));
    let h = Solver::new(
        "le",
        &challenge("hetzner"),
        &lookup(&[("HETZNER_API_TOKEN", "t"), ("HETZNER_API_KEY", "k")]),
    )
    .unwrap();
    assert_eq!(h.checks.timeout, Duration::from_secs(60));
    assert_eq!(
        hetzner::message(
            br#"{"error": {"code": "unauthorized", "message": "unable to authenticate"}}"#
        )
        .as_deref(),
        Some("unable to authenticate (unauthorized)")
    );
}

#[test]
fn route53_reads_its_variables_from_files_and_a_role_to_assume() {
    let dir = tempfile::tempdir().unwrap();
    let key = dir.path().join("key");
    let secret = dir.path().join("secret");
    std::fs::write(&key, "AKIAFROMFILE\n").unwrap();
    std::fs::write(&secret, "s3cr3t\n").unwrap();
    let vars = [
        ("AWS_ACCESS_KEY_ID_FILE", key.to_str().unwrap()),
        ("AWS_SECRET_ACCESS_KEY_FILE", secret.to_str().unwrap()),
        ("AWS_ASSUME_ROLE_ARN", "arn:aws:iam::1:role/dns"),
        ("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9"),
        ("HOME", "/nonexistent"),
    ];
    let r = Solver::new("le", &challenge("route53"), &lookup(&vars)).unwrap();
    assert!(!format!("{r:?}").contains("s3cr3t"));
    let vars = [
        ("AWS_ACCESS_KEY_ID", "AKIA"),
        ("AWS_SECRET_ACCESS_KEY", "x"),
        ("AWS_ASSUME_ROLE_ARN", "arn:aws:iam::1:role/dns"),
        ("AWS_ENDPOINT_URL_STS", "ftp://sts"),
    ];
    let err = Solver::new("le", &challenge("route53"), &lookup(&vars)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "AWS_ENDPOINT_URL_STS: `ftp://sts` is not an http:// or https:// URL"
    );
}

#[test]
fn the_newer_providers_name_every_missing_variable_and_keep_lego_defaults() {
    let missing_with = |provider: &str, given: &[(&str, &str)]| match Solver::new(
        "le",
        &challenge(provider),
        &lookup(given),
    ) {
        Err(DnsError::MissingEnv { variables, .. }) => variables,
        other => panic!("{provider}: {other:?}"),
    };
    let missing = |provider: &str| missing_with(provider, &[]);
    assert_eq!(
        missing("autodns"),
        ["AUTODNS_API_USER", "AUTODNS_API_PASSWORD"]
    );
    assert_eq!(missing("ionos"), ["IONOS_API_KEY"]);
    assert_eq!(
        missing("godaddy"),
        ["GODADDY_API_KEY", "GODADDY_API_SECRET"]
    );
    assert_eq!(
        missing("namecheap"),
        ["NAMECHEAP_API_USER", "NAMECHEAP_API_KEY"]
    );
    assert_eq!(
        missing("netcup"),
        [
            "NETCUP_CUSTOMER_NUMBER",
            "NETCUP_API_KEY",
            "NETCUP_API_PASSWORD"
        ]
    );
    assert_eq!(missing("inwx"), ["INWX_USERNAME", "INWX_PASSWORD"]);
    assert_eq!(
        missing("transip"),
        ["TRANSIP_ACCOUNT_NAME", "TRANSIP_PRIVATE_KEY_PATH"]
    );
    assert_eq!(
        missing("azuredns"),
        [
            "AZURE_CLIENT_ID",
            "AZURE_CLIENT_SECRET",
            "AZURE_TENANT_ID",
            "AZURE_SUBSCRIPTION_ID",
            "AZURE_RESOURCE_GROUP"
        ]
    );
    let msi = [("AZURE_AUTH_METHOD", "msi")];
    let err = Solver::new("le", &challenge("azuredns"), &lookup(&msi)).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("AZURE_AUTH_METHOD: `msi` is not supported"),
        "{err}"
    );
    // OVH: the application key's variables are asked for only when no
    // access token or OAuth 2.0 client is given.
    let endpoint = [("OVH_ENDPOINT", "ovh-eu")];
    assert_eq!(
        missing_with("ovh", &endpoint),
        [
            "OVH_APPLICATION_KEY",
            "OVH_APPLICATION_SECRET",
            "OVH_CONSUMER_KEY"
        ]
    );
    let client = [("OVH_ENDPOINT", "ovh-eu"), ("OVH_CLIENT_ID", "id")];
    assert_eq!(missing_with("ovh", &client), ["OVH_CLIENT_SECRET"]);
    let token = [("OVH_ENDPOINT", "ovh-eu"), ("OVH_ACCESS_TOKEN", "t")];
    assert!(Solver::new("le", &challenge("ovh"), &lookup(&token)).is_ok());
    let gcloud = Solver::new("le", &challenge("gcloud"), &lookup(&[])).unwrap_err();
    assert!(
        matches!(
            gcloud,
            DnsError::MissingCredentials {
                provider: "gcloud",
                ..
            }
        ),
        "{gcloud}"
    );
    let ionos = Solver::new(
        "le",
        &challenge("ionos"),
        &lookup(&[("IONOS_API_KEY", "p.s")]),
    )
    .unwrap();
    assert_eq!(ionos.checks.timeout, Duration::from_secs(900));
    let namecheap = [("NAMECHEAP_API_USER", "u"), ("NAMECHEAP_API_KEY", "k")];
    let namecheap = Solver::new("le", &challenge("namecheap"), &lookup(&namecheap)).unwrap();
    assert_eq!(namecheap.checks.timeout, Duration::from_secs(3600));
    assert_eq!(namecheap.checks.interval, Duration::from_secs(15));
    let sandbox = [
        ("NAMECHEAP_API_USER", "u"),
        ("NAMECHEAP_API_KEY", "k"),
        ("NAMECHEAP_SANDBOX", "maybe"),
    ];
    let err = Solver::new("le", &challenge("namecheap"), &lookup(&sandbox)).unwrap_err();
    assert_eq!(
        err.to_string(),
        "NAMECHEAP_SANDBOX: `maybe` is not true or false"
    );
}
