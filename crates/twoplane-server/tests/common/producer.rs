//! A client of the producer API for tests: a server with a producer token, and requests that
//! carry it.

#![allow(dead_code)] // each test binary uses a different part of `common`

use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use twoplane_server::access::{Access, Secret};
use twoplane_server::producer::Limits;

use super::served::{self, Served};

pub const SECRET: &str = "producer-api-test-secret-0123456789";

pub async fn start() -> Served {
    start_with(Limits::default()).await
}

pub async fn start_with(producer_limits: Limits) -> Served {
    let access = Access { producer_token: Some(Secret::new(SECRET.as_bytes(), "test").unwrap()), ..Access::default() };
    served::start(access, producer_limits).await
}

/// POST `body` to `path` on a fresh connection; the status and the JSON answer.
pub async fn send<B>(addr: SocketAddr, path: &str, body: B) -> (u16, Value)
where
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let request = Request::post(format!("http://{addr}{path}"))
        .header("host", addr.to_string())
        .header("authorization", format!("Bearer {SECRET}"))
        .body(body)
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

pub async fn post(addr: SocketAddr, path: &str, body: impl Into<Bytes>) -> (u16, Value) {
    send(addr, path, Full::new(body.into())).await
}

pub async fn get(addr: SocketAddr, path: &str) -> (u16, Value) {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let request = Request::get(format!("http://{addr}{path}"))
        .header("host", addr.to_string())
        .header("authorization", format!("Bearer {SECRET}"))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

pub async fn stored_text(addr: SocketAddr, id: &str) -> String {
    let (status, answer) = get(addr, &format!("/v1/streams/{id}")).await;
    assert_eq!(status, 200, "{answer}");
    answer["stored"]["text"].as_str().unwrap().to_owned()
}

pub async fn open(addr: SocketAddr, id: &str) {
    let (status, answer) = post(addr, &format!("/v1/streams/{id}/open"), r#"{"create":true}"#).await;
    assert_eq!(status, 200, "{answer}");
}

/// Subscribe to `id` from `from` over the server's SSE endpoint and read every frame until the
/// terminal one (the stream must end: this waits for it).
pub async fn read_frames(addr: SocketAddr, id: &str, from: u64) -> Vec<twoplane_core::message::MessageFrame> {
    let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await.unwrap();
    tokio::spawn(conn);
    let request = Request::get(format!("http://{addr}/api/stream?streamId={id}&from={from}"))
        .header("host", addr.to_string())
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let mut body = response.into_body();
    let mut decoder = twoplane_core::SseDecoder::new();
    let mut frames = Vec::new();
    while let Some(piece) = body.frame().await {
        let Ok(data) = piece.unwrap().into_data() else { continue };
        let mut events = Vec::new();
        decoder.feed(&data, &mut events);
        for e in events {
            let frame = twoplane_core::message::decode_message_frame(&e.data).expect("a frame the codec reads");
            let terminal = frame.is_terminal();
            frames.push(frame);
            if terminal {
                return frames;
            }
        }
    }
    frames
}
