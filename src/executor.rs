//! The executor hyper spawns its per-connection and per-stream tasks on.
//!
//! hyper's HTTP/2 tasks are large: a stream's task holds the whole request
//! future, and the client's per-request tasks share one type with the
//! connection's own task (codec buffers and all). Spawned as they are,
//! tokio copies each into its task, and on to the task's output slot; boxed
//! first, each is copied once and the task holds a pointer.

use std::future::Future;

/// Spawns on the current tokio runtime, boxing the future first.
#[derive(Clone, Copy, Debug, Default)]
pub struct Boxing;

impl<F> hyper::rt::Executor<F> for Boxing
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, fut: F) {
        tokio::spawn(Box::pin(fut));
    }
}
