//! The manager's task list, read with a plain HTTP request: the client
//! library's task model leaves out `NetworksAttachments`, where a task's
//! addresses on its networks are.

use super::views::{TaskFacts, without_prefix};
use crate::provider::docker::Endpoint;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawTask {
    #[serde(rename = "ID")]
    id: String,
    #[serde(rename = "ServiceID", default)]
    service_id: String,
    #[serde(rename = "NodeID", default)]
    node_id: String,
    #[serde(default)]
    created_at: String,
    #[serde(default)]
    status: RawStatus,
    #[serde(default)]
    networks_attachments: Vec<RawAttachment>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct RawStatus {
    #[serde(default)]
    state: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawAttachment {
    #[serde(default)]
    network: RawNetwork,
    #[serde(default)]
    addresses: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct RawNetwork {
    #[serde(default)]
    spec: RawNetworkSpec,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct RawNetworkSpec {
    #[serde(default)]
    name: String,
}

/// Tasks whose desired state is `running`, from the manager at
/// `endpoint` speaking API `version` (`1.41`).
pub async fn running_tasks(
    endpoint: &Endpoint,
    version: &str,
    timeout: Duration,
) -> Result<Vec<TaskFacts>, String> {
    let query: String =
        percent_encoding::utf8_percent_encode(r#"{"desired-state":["running"]}"#, QUERY).collect();
    let path = format!("/v{version}/tasks?filters={query}");
    let body = tokio::time::timeout(timeout, get(endpoint, &path))
        .await
        .map_err(|_| format!("GET {path}: no answer within {timeout:?}"))??;
    parse(&body).map_err(|e| format!("GET {path}: {e}"))
}

/// Bytes a query value may not hold as they are.
const QUERY: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.');

async fn get(endpoint: &Endpoint, path: &str) -> Result<Vec<u8>, String> {
    match endpoint {
        Endpoint::Unix(socket) => {
            let stream = tokio::net::UnixStream::connect(socket)
                .await
                .map_err(|e| format!("{socket}: {e}"))?;
            request(stream, "localhost", path).await
        }
        Endpoint::Tcp(addr) => {
            let stream = tokio::net::TcpStream::connect(addr)
                .await
                .map_err(|e| format!("{addr}: {e}"))?;
            request(stream, addr, path).await
        }
        Endpoint::Tls(addr, tls) => {
            let stream = tokio::net::TcpStream::connect(addr)
                .await
                .map_err(|e| format!("{addr}: {e}"))?;
            let host = addr.rsplit_once(':').map_or(addr.as_str(), |(h, _)| h);
            let name = rustls::pki_types::ServerName::try_from(
                host.trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned(),
            )
            .map_err(|e| format!("{addr}: {e}"))?;
            let stream = tokio_rustls::TlsConnector::from(tls.0.clone())
                .connect(name, stream)
                .await
                .map_err(|e| format!("{addr}: TLS: {e}"))?;
            request(stream, addr, path).await
        }
    }
}

async fn request<S>(stream: S, host: &str, path: &str) -> Result<Vec<u8>, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake::<_, Empty<bytes::Bytes>>(TokioIo::new(stream))
            .await
            .map_err(|e| e.to_string())?;
    let driver = tokio::spawn(conn);
    let req = http::Request::get(path)
        .header(http::header::HOST, host)
        .body(Empty::new())
        .map_err(|e| e.to_string())?;
    let answer = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = answer.status();
    let body = answer
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    driver.abort();
    if !status.is_success() {
        return Err(format!(
            "GET {path}: {status}: {}",
            String::from_utf8_lossy(&body).trim()
        ));
    }
    Ok(body.to_vec())
}

fn parse(body: &[u8]) -> Result<Vec<TaskFacts>, serde_json::Error> {
    let raw: Vec<RawTask> = serde_json::from_slice(body)?;
    Ok(raw
        .into_iter()
        .map(|t| TaskFacts {
            running: t.status.state == "running",
            created_ns: created_ns(&t.created_at),
            addresses: t
                .networks_attachments
                .into_iter()
                .filter_map(|a| {
                    let first = a.addresses.first()?;
                    Some((a.network.spec.name, without_prefix(first)))
                })
                .collect::<BTreeMap<_, _>>(),
            id: t.id,
            service_id: t.service_id,
            node_id: t.node_id,
        })
        .collect())
}

/// Nanoseconds since the epoch of an RFC 3339 time (0 when it does not parse).
pub fn created_ns(text: &str) -> i128 {
    crate::provider::docker::container::parse_rfc3339(text).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_list_gives_states_nodes_and_addresses() {
        let body = br#"[
          {"ID":"t1","ServiceID":"s1","NodeID":"n1","CreatedAt":"2026-12-01T10:00:00.5Z",
           "Status":{"State":"running","Timestamp":"2026-12-01T10:00:01Z"},"DesiredState":"running",
           "NetworksAttachments":[{"Network":{"ID":"x","Spec":{"Name":"stack_net"}},"Addresses":["10.0.1.7/24"]}]},
          {"ID":"t2","ServiceID":"s1","NodeID":"n2","Status":{"State":"starting"}}
        ]"#;
        let tasks = parse(body).unwrap();
        assert_eq!(tasks.len(), 2);
        assert!(tasks[0].running && !tasks[1].running);
        assert_eq!(tasks[0].addresses["stack_net"], "10.0.1.7");
        assert_eq!(tasks[0].created_ns, 1_796_119_200_500_000_000);
        assert!(tasks[1].addresses.is_empty());
        assert!(parse(b"{").is_err());
    }
}
