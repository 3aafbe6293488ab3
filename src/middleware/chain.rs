//! A router's middlewares in order, and how a request runs through them to
//! the service and back.

use super::{ClientUsername, Exchange, Flow, Middleware, Req, Resp};
use futures_util::future::BoxFuture;
use std::any::Any;
use std::sync::Arc;

/// The end of a chain: what sends a request to a service. The proxy
/// implements it; middlewares reach it through [`Next`].
pub trait Terminal: Send + Sync {
    /// Sends the request to the route's service and returns its response
    /// (or gangway's error response when the service cannot be used).
    fn send(&self, req: Req) -> BoxFuture<'_, Resp>;

    /// Sends a request to another service of the same runtime (the errors
    /// middleware fetches its pages this way).
    fn send_to<'a>(&'a self, service: &'a ServiceRef, req: Req) -> BoxFuture<'a, Resp>;
}

/// A handle on a compiled service, opaque to the middlewares: compile puts
/// the runtime's service in, the proxy takes it out.
#[derive(Clone)]
pub struct ServiceRef(Arc<dyn Any + Send + Sync>);

impl ServiceRef {
    /// Wraps a compiled service.
    pub fn new<T: Any + Send + Sync>(service: Arc<T>) -> Self {
        ServiceRef(service)
    }

    /// The compiled service, if it is a `T`.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.downcast_ref::<T>()
    }
}

impl std::fmt::Debug for ServiceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ServiceRef")
    }
}

/// A router's middlewares, in order (chains already flattened). Empty for
/// a router without middlewares, which then never builds an `Exchange`.
#[derive(Clone, Default)]
pub struct Chain {
    layers: Box<[Arc<dyn Middleware>]>,
    /// Each layer's type and name, for its span; empty when not known.
    names: Arc<[LayerName]>,
}

/// A middleware's type and name, as its span shows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayerName {
    /// The span's name: the type, capitalised as Traefik's type names
    /// are (`StripPrefix`).
    pub span: String,
    /// `traefik.middleware.name`: the qualified name.
    pub name: String,
}

impl LayerName {
    /// The name of middleware `name` of type `kind` (`stripPrefix`).
    pub fn new(kind: &str, name: &str) -> Self {
        let mut span = String::with_capacity(kind.len());
        let mut chars = kind.chars();
        if let Some(first) = chars.next() {
            span.extend(first.to_uppercase());
            span.push_str(chars.as_str());
        }
        LayerName {
            span,
            name: name.to_owned(),
        }
    }
}

impl Chain {
    /// A chain of these middlewares, in order.
    pub fn new(layers: Vec<Arc<dyn Middleware>>) -> Self {
        Self {
            layers: layers.into_boxed_slice(),
            names: Arc::from(Vec::new()),
        }
    }

    /// A chain of these middlewares, in order, with their names (one per
    /// layer) for their spans.
    pub fn named(layers: Vec<Arc<dyn Middleware>>, names: Vec<LayerName>) -> Self {
        Self {
            layers: layers.into_boxed_slice(),
            names: names.into(),
        }
    }

    /// No middleware at all.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    /// How many middlewares.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// Runs `req` through the middlewares to `end` and the response back.
    pub async fn run(&self, req: Req, cx: &Exchange, end: &dyn Terminal) -> Resp {
        run(&self.layers, &self.names, req, cx, end).await
    }
}

/// The rest of a chain, handed to a wrapping middleware. `Copy`, so that a
/// middleware can run it more than once (retry).
#[derive(Clone, Copy)]
pub struct Next<'a> {
    layers: &'a [Arc<dyn Middleware>],
    names: &'a [LayerName],
    cx: &'a Exchange,
    end: &'a dyn Terminal,
}

impl<'a> Next<'a> {
    /// Runs the rest of the chain and the service.
    pub fn run(self, req: Req) -> BoxFuture<'a, Resp> {
        Box::pin(run(self.layers, self.names, req, self.cx, self.end))
    }

    /// Sends a request to another service of the runtime, skipping the rest
    /// of this chain.
    pub fn send_to(self, service: &'a ServiceRef, req: Req) -> BoxFuture<'a, Resp> {
        self.end.send_to(service, req)
    }
}

/// Opens the span of the middleware named `name` (Traefik's: its type,
/// with `traefik.middleware.name`), under the request's current span.
fn enter(req: &mut Req, name: Option<&LayerName>) -> Option<crate::otel::trace::Span> {
    let span_name = name.map_or("Middleware".to_owned(), |n| n.span.clone());
    let mut span = crate::otel::trace::enter(req, span_name, crate::otel::trace::Kind::Internal)?;
    if let Some(n) = name {
        span.set_str("traefik.middleware.name", &n.name);
    }
    Some(span)
}

async fn run(
    layers: &[Arc<dyn Middleware>],
    names: &[LayerName],
    mut req: Req,
    cx: &Exchange,
    end: &dyn Terminal,
) -> Resp {
    // One look per chain, and none at all for a request without
    // extensions (the usual one with tracing off): only traced requests
    // carry a `Traced`, and only they fill `spans` (which allocates nothing
    // while empty).
    let traced = !req.extensions().is_empty()
        && req
            .extensions()
            .get::<crate::otel::trace::Traced>()
            .is_some();
    let mut spans = Vec::new();
    // Steps run in a plain loop; the first wrapping middleware takes the
    // rest of the chain (and is the only place a future gets boxed).
    let mut passed = 0;
    let mut answer = None;
    for m in layers {
        if m.wraps() {
            break;
        }
        if traced {
            spans.extend(enter(&mut req, names.get(passed)));
        }
        match m.request(&mut req, cx) {
            Flow::Continue => passed += 1,
            Flow::Respond(resp) => {
                answer = Some(resp);
                break;
            }
        }
    }
    // An auth step's user rides on the response to the access log; a user
    // found further in (a later auth middleware) is already there and wins,
    // as the last one to set it does in Traefik.
    let user = req.extensions_mut().remove::<ClientUsername>();
    let mut resp = match answer {
        Some(resp) => resp,
        None => match layers.get(passed) {
            None => end.send(req).await,
            Some(wrapper) => {
                let span = if traced {
                    enter(&mut req, names.get(passed))
                } else {
                    None
                };
                let next = Next {
                    layers: layers.get(passed + 1..).unwrap_or(&[]),
                    names: names.get(passed + 1..).unwrap_or(&[]),
                    cx,
                    end,
                };
                let resp = wrapper.call(req, cx, next).await;
                drop(span);
                resp
            }
        },
    };
    if let Some(user) = user
        && resp.extensions().get::<ClientUsername>().is_none()
    {
        resp.extensions_mut().insert(user);
    }
    // The step that answered early ends first.
    if spans.len() > passed {
        spans.pop();
    }
    for m in layers[..passed].iter().rev() {
        m.response(&mut resp, cx);
        spans.pop();
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{ProxyBody, RequestBody};
    use http::{HeaderValue, Request, Response, StatusCode};
    use std::sync::Mutex;

    /// Records the order of calls, for the test only.
    struct Tag(&'static str, Arc<Mutex<Vec<String>>>, bool);

    impl Middleware for Tag {
        fn request(&self, req: &mut Req, _cx: &Exchange) -> Flow {
            self.1
                .lock()
                .expect("test lock")
                .push(format!("req {}", self.0));
            if self.2 {
                return Flow::Respond(Response::new(ProxyBody::text("early")));
            }
            req.headers_mut()
                .append("x-tag", HeaderValue::from_static(self.0));
            Flow::Continue
        }
        fn response(&self, _resp: &mut Resp, _cx: &Exchange) {
            self.1
                .lock()
                .expect("test lock")
                .push(format!("resp {}", self.0));
        }
    }

    struct Twice;
    impl Middleware for Twice {
        fn wraps(&self) -> bool {
            true
        }
        fn call<'a>(&'a self, req: Req, _cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
            Box::pin(async move {
                let (parts, _) = req.into_parts();
                let first = Request::from_parts(parts.clone(), RequestBody::empty());
                let _ = next.run(first).await;
                next.run(Request::from_parts(parts, RequestBody::empty()))
                    .await
            })
        }
    }

    struct End(Arc<Mutex<Vec<String>>>);
    impl Terminal for End {
        fn send(&self, req: Req) -> BoxFuture<'_, Resp> {
            let tags: Vec<_> = req
                .headers()
                .get_all("x-tag")
                .iter()
                .map(|v| v.to_str().unwrap_or("").to_owned())
                .collect();
            self.0
                .lock()
                .expect("test lock")
                .push(format!("send {}", tags.join(",")));
            Box::pin(async { Response::new(ProxyBody::empty()) })
        }
        fn send_to<'a>(&'a self, _s: &'a ServiceRef, _req: Req) -> BoxFuture<'a, Resp> {
            Box::pin(async { Response::new(ProxyBody::empty()) })
        }
    }

    fn cx() -> Exchange {
        Exchange {
            peer: [127, 0, 0, 1].into(),
            tls: false,
            host: None,
            client_certs: None,
        }
    }

    #[tokio::test]
    async fn steps_run_in_order_and_responses_in_reverse() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let chain = Chain::new(vec![
            Arc::new(Tag("a", log.clone(), false)),
            Arc::new(Tag("b", log.clone(), false)),
        ]);
        let end = End(log.clone());
        let resp = chain
            .run(Request::new(RequestBody::empty()), &cx(), &end)
            .await;
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(
            *log.lock().expect("test lock"),
            ["req a", "req b", "send a,b", "resp b", "resp a"]
        );
    }

    #[tokio::test]
    async fn an_early_answer_skips_the_rest_and_its_own_response_phase() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let chain = Chain::new(vec![
            Arc::new(Tag("a", log.clone(), false)),
            Arc::new(Tag("stop", log.clone(), true)),
            Arc::new(Tag("c", log.clone(), false)),
        ]);
        let end = End(log.clone());
        chain
            .run(Request::new(RequestBody::empty()), &cx(), &end)
            .await;
        assert_eq!(
            *log.lock().expect("test lock"),
            ["req a", "req stop", "resp a"]
        );
    }

    #[tokio::test]
    async fn a_wrapper_can_run_the_rest_twice() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let chain = Chain::new(vec![
            Arc::new(Tag("a", log.clone(), false)),
            Arc::new(Twice),
            Arc::new(Tag("b", log.clone(), false)),
        ]);
        let end = End(log.clone());
        chain
            .run(Request::new(RequestBody::empty()), &cx(), &end)
            .await;
        assert_eq!(
            *log.lock().expect("test lock"),
            [
                "req a", "req b", "send a,b", "resp b", "req b", "send a,b", "resp b", "resp a"
            ]
        );
    }
}
