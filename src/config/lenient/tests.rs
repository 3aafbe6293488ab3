use super::*;
use crate::config::dynamic::{Middleware, Router, Service};
use serde_json::json;

#[test]
fn option_names_match_in_any_case_and_map_keys_stay_as_written() {
    let router: Router = from_value(json!({
        "RULE": "Host(`a.test`)",
        "entrypoints": ["web"],
        "Service": "app",
    }))
    .unwrap();
    assert_eq!(router.rule, "Host(`a.test`)");
    assert_eq!(router.entry_points, vec!["web".to_owned()]);
    assert_eq!(router.service, "app");

    let m: Middleware = from_value(json!({
        "headers": { "customRequestHeaders": { "X-Mixed-Case": "v" } }
    }))
    .unwrap();
    let headers = m.headers.expect("headers");
    assert_eq!(
        headers.custom_request_headers.keys().collect::<Vec<_>>(),
        ["X-Mixed-Case"]
    );
}

#[test]
fn a_middleware_type_in_another_case_is_that_type() {
    let m: Middleware = from_value(json!({ "forwardauth": { "address": "http://auth" } })).unwrap();
    assert_eq!(m.invalid, None);
    assert_eq!(m.kinds(), ["forwardAuth"]);
}

#[test]
fn scalars_convert_to_the_kind_the_option_wants() {
    let router: Router = from_value(json!({
        "rule": "Host(`a.test`)",
        "priority": "42",
        "entryPoints": "web, websecure",
    }))
    .unwrap();
    assert_eq!(router.priority, Some(42));
    assert_eq!(router.entry_points, ["web", "websecure"]);

    let service: Service = from_value(json!({
        "loadBalancer": {
            "passHostHeader": "false",
            "servers": [{ "url": "http://127.0.0.1:1", "weight": "3" }]
        }
    }))
    .unwrap();
    let lb = service.load_balancer.expect("loadBalancer");
    assert_eq!(lb.pass_host_header, Some(false));

    let m: Middleware = from_value(json!({ "stripPrefix": { "prefixes": "/api" } })).unwrap();
    assert_eq!(m.strip_prefix.expect("stripPrefix").prefixes, ["/api"]);
}

#[test]
fn what_does_not_read_is_an_error_naming_the_option() {
    let err = from_value::<Router>(json!({ "servce": "app" })).unwrap_err();
    match err {
        LenientError::UnknownField { field, expected } => {
            assert_eq!(field, "servce");
            assert!(expected.contains(&"service"));
        }
        other => panic!("{other:?}"),
    }
    let err = from_value::<Router>(json!({ "priority": "high" })).unwrap_err();
    assert!(
        matches!(&err, LenientError::Invalid(m) if m.contains("\"high\"")),
        "{err}"
    );
    let err = from_value::<Router>(json!({ "entryPoints": { "web": 1 } })).unwrap_err();
    assert!(matches!(err, LenientError::Invalid(_)), "{err}");
}
