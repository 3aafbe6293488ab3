//! A running watch: the gateway's open-ended answer to `/v3/watch`, read
//! one line (one JSON message) at a time.

use super::wire::{EventType, WatchLine, WatchResponse};
use super::{EtcdError, MAX_ANSWER, text_pair};
use http_body_util::BodyExt;
use hyper::body::Incoming;

/// The path a watch is opened on.
const PATH: &str = "/v3/watch";

/// One change to a key under the watched prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The key was written (created or changed).
    Put {
        /// The whole key.
        key: String,
        /// Its new value.
        value: String,
        /// The revision of the write.
        revision: i64,
    },
    /// The key was deleted.
    Delete {
        /// The whole key.
        key: String,
        /// The revision of the delete.
        revision: i64,
    },
}

/// The changes etcd sent in one message, in the order they happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchBatch {
    /// The revision of the last change in the batch: after a reconnect,
    /// watch again from the one after it.
    pub revision: i64,
    /// The changes, oldest first.
    pub changes: Vec<Change>,
}

/// Changes under a prefix as etcd sends them; see
/// [`super::EtcdClient::watch_prefix`]. Dropping it closes the connection,
/// which ends the watch on the server.
#[derive(Debug)]
pub struct EtcdWatch {
    endpoint: String,
    prefix: String,
    body: Incoming,
    /// Bytes received that do not make a whole line yet.
    pending: Vec<u8>,
    /// How much of `pending` is known to hold no line end.
    scanned: usize,
    /// Set once the watch has ended; later calls give nothing.
    done: bool,
}

impl EtcdWatch {
    pub(super) fn new(endpoint: String, prefix: String, body: Incoming) -> Self {
        EtcdWatch {
            endpoint,
            prefix,
            body,
            pending: Vec::new(),
            scanned: 0,
            done: false,
        }
    }

    /// The endpoint the watch runs on.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The next batch of changes; an error when the watch ended (after
    /// which it gives `None`). Cancel-safe: a batch is only taken from the
    /// connection when it is returned.
    pub async fn next(&mut self) -> Option<Result<WatchBatch, EtcdError>> {
        if self.done {
            return None;
        }
        loop {
            let outcome = match self.next_response().await {
                Ok(response) if response.canceled => Err(self.canceled(response)),
                // `created` repeated, or a progress notice: nothing changed.
                Ok(response) if response.events.is_empty() => continue,
                Ok(response) => self.batch(response),
                Err(e) => Err(e),
            };
            if outcome.is_err() {
                self.done = true;
            }
            return Some(outcome);
        }
    }

    /// The watch as a `Stream` of what [`EtcdWatch::next`] gives.
    pub fn into_stream(
        self,
    ) -> impl futures_util::Stream<Item = Result<WatchBatch, EtcdError>> + Send {
        futures_util::stream::unfold(self, |mut watch| async move {
            let item = watch.next().await?;
            Some((item, watch))
        })
    }

    /// Waits for etcd's `created`, which says the watch is in place.
    pub(super) async fn confirm(&mut self) -> Result<(), EtcdError> {
        let response = self.next_response().await?;
        if response.canceled {
            self.done = true;
            return Err(self.canceled(response));
        }
        if !response.created {
            return Err(self.bad_json("the first message does not confirm the watch".to_owned()));
        }
        Ok(())
    }

    /// The next message of the stream, as it comes.
    async fn next_response(&mut self) -> Result<WatchResponse, EtcdError> {
        loop {
            if let Some(at) = self.pending[self.scanned..]
                .iter()
                .position(|b| *b == b'\n')
            {
                let end = self.scanned + at;
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                self.scanned = 0;
                match self.parse(&line[..end])? {
                    Some(response) => return Ok(response),
                    None => continue,
                }
            }
            self.scanned = self.pending.len();
            if self.pending.len() > MAX_ANSWER {
                return Err(EtcdError::TooLarge {
                    endpoint: self.endpoint.clone(),
                    path: PATH,
                    key: Some(self.prefix.clone()),
                    limit: MAX_ANSWER,
                });
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    // Trailers (the gateway's gRPC trailer) carry nothing here.
                    if let Ok(data) = frame.into_data() {
                        self.pending.extend_from_slice(&data);
                    }
                }
                Some(Err(e)) => {
                    return Err(self.ended(format!(
                        "the connection broke: {}",
                        crate::cause::WithCauses(&e)
                    )));
                }
                None => {
                    // A last message without its line end (an error the
                    // gateway wrote as it closed) still says why; a line
                    // cut short by the close does not.
                    let rest = std::mem::take(&mut self.pending);
                    self.scanned = 0;
                    return match self.parse(&rest) {
                        Ok(Some(response)) => Ok(response),
                        Ok(None) | Err(EtcdError::BadJson { .. }) => {
                            Err(self.ended("the server closed the stream".to_owned()))
                        }
                        Err(e) => Err(e),
                    };
                }
            }
        }
    }

    /// One line: a message, nothing (a blank line), or the error it holds.
    fn parse(&self, line: &[u8]) -> Result<Option<WatchResponse>, EtcdError> {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(None);
        }
        let parsed: WatchLine =
            serde_json::from_slice(line).map_err(|e| self.bad_json(e.to_string()))?;
        match (parsed.result, parsed.error) {
            (_, Some(error)) => Err(EtcdError::WatchCanceled {
                endpoint: self.endpoint.clone(),
                prefix: self.prefix.clone(),
                reason: if error.message.is_empty() {
                    error.error
                } else {
                    error.message
                },
            }),
            (Some(result), None) => Ok(Some(result)),
            (None, None) => {
                Err(self.bad_json("a message with neither result nor error".to_owned()))
            }
        }
    }

    fn batch(&self, response: WatchResponse) -> Result<WatchBatch, EtcdError> {
        let mut changes = Vec::with_capacity(response.events.len());
        let mut revision = response.header.revision;
        for event in response.events {
            let kv = event.kv;
            revision = kv.mod_revision;
            changes.push(match event.kind {
                EventType::Put => {
                    let (key, value) = text_pair(&self.endpoint, kv.key.0, kv.value.0)?;
                    Change::Put {
                        key,
                        value,
                        revision,
                    }
                }
                EventType::Delete => {
                    let (key, _) = text_pair(&self.endpoint, kv.key.0, Vec::new())?;
                    Change::Delete { key, revision }
                }
            });
        }
        Ok(WatchBatch { revision, changes })
    }

    fn canceled(&self, response: WatchResponse) -> EtcdError {
        if response.compact_revision > 0 {
            return EtcdError::Compacted {
                endpoint: self.endpoint.clone(),
                prefix: self.prefix.clone(),
                compact_revision: response.compact_revision,
            };
        }
        EtcdError::WatchCanceled {
            endpoint: self.endpoint.clone(),
            prefix: self.prefix.clone(),
            reason: if response.cancel_reason.is_empty() {
                "etcd gave no reason".to_owned()
            } else {
                response.cancel_reason
            },
        }
    }

    fn ended(&self, reason: String) -> EtcdError {
        EtcdError::WatchEnded {
            endpoint: self.endpoint.clone(),
            prefix: self.prefix.clone(),
            reason,
        }
    }

    fn bad_json(&self, reason: String) -> EtcdError {
        EtcdError::BadJson {
            endpoint: self.endpoint.clone(),
            path: PATH,
            key: Some(self.prefix.clone()),
            reason,
        }
    }
}
