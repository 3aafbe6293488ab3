//! `rateLimit.redis`: two gangway instances in front of one Redis (Debian's
//! redis-server, started by the test) draw from one budget per client.

use crate::support;

use http::StatusCode;
use std::time::Duration;
use support::kv::Redis;
use support::{Backend, Gangway, eventually};

const WAIT: Duration = Duration::from_secs(10);

fn config(backend: &str, redis_port: u16) -> String {
    format!(
        "[http.routers.app]\nrule = \"Host(`app.test`)\"\nservice = \"app\"\nmiddlewares = [\"limit\"]\n\
         [http.routers.plain]\nrule = \"Host(`plain.test`)\"\nservice = \"app\"\n\
         [http.services.app.loadBalancer]\n[[http.services.app.loadBalancer.servers]]\nurl = \"{backend}\"\n\
         [http.middlewares.limit.rateLimit]\naverage = 1\nperiod = \"1m\"\nburst = 3\n\
         [http.middlewares.limit.rateLimit.redis]\nendpoints = [\"127.0.0.1:{redis_port}\"]\ndb = 2\n\
         readTimeout = \"2s\"\npoolSize = 10\n"
    )
}

async fn start(conf: &str) -> Gangway {
    let gw = Gangway::with_file(conf, &[]).await;
    eventually(WAIT, "configuration applied", || async {
        gw.get("plain.test", "/").await.status == StatusCode::OK
    })
    .await;
    gw
}

#[tokio::test]
async fn two_instances_share_one_budget_through_redis() {
    let test = "two_instances_share_one_budget_through_redis";
    let Some(mut redis) = Redis::start(test, false).await else {
        return;
    };
    let b = Backend::echo("b").await;
    let conf = config(&b.url(), redis.port);
    let one = start(&conf).await;
    let two = start(&conf).await;

    // A burst of three for this client, wherever it lands.
    assert_eq!(one.get("app.test", "/").await.status, StatusCode::OK);
    assert_eq!(two.get("app.test", "/").await.status, StatusCode::OK);
    assert_eq!(one.get("app.test", "/").await.status, StatusCode::OK);
    for gw in [&two, &one] {
        let got = gw.get("app.test", "/").await;
        assert_eq!(got.status, StatusCode::TOO_MANY_REQUESTS, "{}", got.text());
        assert!(got.headers.contains_key("retry-after"));
    }
    // The bucket is in Redis, in the database asked for.
    let keys = redis.cli(&["-n", "2", "KEYS", "gangway:rateLimit:*"]);
    assert!(keys.contains("limit@file"), "keys: {keys:?}");

    // Without Redis the limiter cannot decide: 500, as in Traefik; routers
    // without it are unaffected.
    redis.stop();
    let got = one.get("app.test", "/").await;
    assert_eq!(
        got.status,
        StatusCode::INTERNAL_SERVER_ERROR,
        "{}",
        got.text()
    );
    assert_eq!(one.get("plain.test", "/").await.status, StatusCode::OK);
}
