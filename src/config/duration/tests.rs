use super::{Duration, DurationError};
use serde::Deserialize;

fn parse(text: &str) -> Duration {
    match text.parse() {
        Ok(d) => d,
        Err(e) => panic!("`{text}` should parse: {e}"),
    }
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

#[test]
fn unit_forms() {
    assert_eq!(parse("10s"), Duration::from_secs(10));
    assert_eq!(parse("250ms"), ms(250));
    assert_eq!(parse("1m30s"), Duration::from_secs(90));
    assert_eq!(parse("1h"), Duration::from_secs(3600));
    assert_eq!(parse("2h45m"), Duration::from_secs(2 * 3600 + 45 * 60));
    assert_eq!(parse("2.5s"), ms(2500));
    assert_eq!(parse("1.5h"), Duration::from_secs(5400));
    assert_eq!(parse(".5s"), ms(500));
    assert_eq!(parse("0.1s"), ms(100));
    assert_eq!(
        parse("100us"),
        Duration(std::time::Duration::from_micros(100))
    );
    assert_eq!(
        parse("100µs"),
        Duration(std::time::Duration::from_micros(100))
    );
    assert_eq!(
        parse("100μs"),
        Duration(std::time::Duration::from_micros(100))
    );
    assert_eq!(parse("10ns"), Duration(std::time::Duration::from_nanos(10)));
    assert_eq!(parse("1s500ms"), ms(1500));
    assert_eq!(parse("+3s"), Duration::from_secs(3));
    assert_eq!(parse(" 3s "), Duration::from_secs(3));
}

#[test]
fn zero_forms() {
    for text in ["0", "0s", "0ms", "0.0", "0h0m0s"] {
        assert_eq!(parse(text), Duration::ZERO, "{text}");
    }
    assert_eq!(Duration::default(), Duration::ZERO);
    assert!(Duration::ZERO.is_zero());
    assert_eq!(Duration::ZERO.non_zero(), None);
    assert_eq!(ms(5).non_zero(), Some(std::time::Duration::from_millis(5)));
}

#[test]
fn bare_numbers_are_seconds() {
    assert_eq!(parse("10"), Duration::from_secs(10));
    assert_eq!(parse("2.5"), ms(2500));
    assert_eq!(parse("180"), Duration::from_secs(180));
}

#[test]
fn errors_say_what_to_write() {
    let err = "abc".parse::<Duration>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "`abc` is not a duration (try `10s` or `250ms`)"
    );
    for text in ["", "s", "10s5", "1..5s", ".", "ms10", "1e3s"] {
        assert!(text.parse::<Duration>().is_err(), "`{text}` should fail");
    }
    assert!(matches!(
        "10d".parse::<Duration>(),
        Err(DurationError::UnknownUnit { unit, .. }) if unit == "d"
    ));
    assert!(matches!(
        "10 s".parse::<Duration>(),
        Err(DurationError::UnknownUnit { .. })
    ));
    assert!(matches!(
        "10S".parse::<Duration>(),
        Err(DurationError::UnknownUnit { .. })
    ));
}

#[test]
fn negative_is_an_error() {
    for text in ["-1s", "-0", "-5"] {
        let err = text.parse::<Duration>().unwrap_err();
        assert!(matches!(err, DurationError::Negative { .. }), "{text}");
        assert!(err.to_string().contains("negative"), "{err}");
    }
    assert!(matches!(
        "-x".parse::<Duration>(),
        Err(DurationError::Invalid { .. })
    ));
}

#[test]
fn too_large_is_an_error_not_a_panic() {
    for text in [
        "99999999999999999999999999h",
        "18446744073709551616",
        "9999999999999999999999999999999999999999s",
        "5124095576030432h",
    ] {
        assert!(
            matches!(
                text.parse::<Duration>(),
                Err(DurationError::TooLarge { .. })
            ),
            "{text}"
        );
    }
    // Many fractional digits are fine: those below a nanosecond are dropped.
    assert_eq!(
        parse("1.0000000000000000000000001s"),
        Duration::from_secs(1)
    );
}

#[test]
fn canonical_text() {
    let cases = [
        (Duration::ZERO, "0s"),
        (Duration::from_secs(10), "10s"),
        (ms(250), "250ms"),
        (Duration::from_secs(90), "1m30s"),
        (Duration::from_secs(3600), "1h"),
        (Duration::from_secs(3605), "1h5s"),
        (Duration::from_secs(5400), "1h30m"),
        (ms(2500), "2.5s"),
        (ms(61_500), "1m1.5s"),
        (Duration(std::time::Duration::from_micros(1500)), "1.5ms"),
        (Duration(std::time::Duration::from_micros(100)), "100us"),
        (Duration(std::time::Duration::from_nanos(10)), "10ns"),
        (
            Duration(std::time::Duration::from_nanos(1_000_000_001)),
            "1.000000001s",
        ),
        (Duration::from_secs(180), "3m"),
    ];
    for (duration, text) in cases {
        assert_eq!(duration.to_string(), text);
        assert_eq!(parse(text), duration, "round trip of {text}");
    }
}

#[derive(Debug, Deserialize)]
struct Holder {
    d: Duration,
}

#[test]
fn serde_forms() {
    let from_toml = |text: &str| toml::from_str::<Holder>(text).map(|h| h.d);
    assert_eq!(from_toml("d = \"10s\"").unwrap(), Duration::from_secs(10));
    assert_eq!(from_toml("d = 10").unwrap(), Duration::from_secs(10));
    assert_eq!(from_toml("d = 2.5").unwrap(), ms(2500));
    assert_eq!(from_toml("d = \"7\"").unwrap(), Duration::from_secs(7));
    assert!(
        from_toml("d = -1")
            .unwrap_err()
            .to_string()
            .contains("negative")
    );
    assert!(
        from_toml("d = -1.5")
            .unwrap_err()
            .to_string()
            .contains("negative")
    );
    assert!(from_toml("d = nan").is_err());
    assert!(from_toml("d = inf").is_err());
    assert!(from_toml("d = true").is_err());
    assert!(
        from_toml("d = \"abc\"")
            .unwrap_err()
            .to_string()
            .contains("`abc` is not a duration")
    );

    let from_yaml = |text: &str| serde_yaml::from_str::<Holder>(text).map(|h| h.d);
    assert_eq!(from_yaml("d: 1m30s").unwrap(), Duration::from_secs(90));
    assert_eq!(from_yaml("d: 30").unwrap(), Duration::from_secs(30));
    assert_eq!(from_yaml("d: 0.25").unwrap(), ms(250));

    let json = serde_json::to_string(&Duration::from_secs(90)).unwrap();
    assert_eq!(json, "\"1m30s\"");
    let back: Duration = serde_json::from_str(&json).unwrap();
    assert_eq!(back, Duration::from_secs(90));
}

#[test]
fn conversions() {
    let std = std::time::Duration::from_millis(1234);
    let ours = Duration::from(std);
    assert_eq!(ours.get(), std);
    assert_eq!(std::time::Duration::from(ours), std);
}

#[test]
fn signed_durations_keep_their_sign() {
    use super::SignedDuration;
    let parse = |s: &str| s.parse::<SignedDuration>();
    let d = parse("-1s").unwrap();
    assert!(d.negative);
    assert_eq!(d.non_negative(), None);
    assert_eq!(d.to_string(), "-1s");
    assert_eq!(parse("100ms").unwrap().non_negative(), Some(ms(100).0));
    // `-0` is no different from `0`.
    assert_eq!(parse("-0s").unwrap().non_negative(), Some(ms(0).0));
    assert!(
        parse("-abc")
            .unwrap_err()
            .to_string()
            .contains("`-abc` is not a duration")
    );
    #[derive(serde::Deserialize)]
    struct Holder {
        d: SignedDuration,
    }
    let from_toml = |text: &str| toml::from_str::<Holder>(text).map(|h| h.d);
    assert!(from_toml("d = -1").unwrap().negative);
    assert!(from_toml("d = \"-250ms\"").unwrap().negative);
    assert_eq!(
        from_toml("d = 2").unwrap().non_negative(),
        Some(std::time::Duration::from_secs(2))
    );
    assert!(from_toml("d = -0.5").unwrap().negative);
    let json = serde_json::to_string(&parse("-250ms").unwrap()).unwrap();
    assert_eq!(json, "\"-250ms\"");
}
