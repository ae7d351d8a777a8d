//! A small load generator for the gateway: keep-alive HTTP/1.1 clients on
//! `/health`, and WebSocket chat sessions. Shared by the bounded load test
//! (`tests/it/load.rs`) and the benchmark (`benches/load.rs`); it measures,
//! it never asserts a time.

use futures_util::{SinkExt, StreamExt};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::{self, Message};

/// Latencies of one run.
#[derive(Debug, Clone)]
pub struct Run {
    pub ok: usize,
    pub failed: usize,
    pub wall: Duration,
    pub latencies: Vec<Duration>,
}

impl Run {
    pub fn per_sec(&self) -> f64 {
        self.ok as f64 / self.wall.as_secs_f64()
    }

    pub fn quantile(&self, q: f64) -> Duration {
        let mut l = self.latencies.clone();
        l.sort();
        if l.is_empty() {
            return Duration::ZERO;
        }
        let i = ((l.len() as f64 - 1.0) * q).round() as usize;
        l[i.min(l.len() - 1)]
    }

    pub fn line(&self, what: &str, unit: &str) -> String {
        format!(
            "{what}: {} ok, {} failed in {:.2} s = {:.0} {unit}/s; p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            self.ok,
            self.failed,
            self.wall.as_secs_f64(),
            self.per_sec(),
            self.quantile(0.5).as_secs_f64() * 1e3,
            self.quantile(0.99).as_secs_f64() * 1e3,
            self.quantile(1.0).as_secs_f64() * 1e3,
        )
    }
}

/// One keep-alive GET; the status.
async fn get(
    r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    w: &mut tokio::net::tcp::OwnedWriteHalf,
    req: &[u8],
) -> std::io::Result<u16> {
    w.write_all(req).await?;
    let mut line = String::new();
    r.read_line(&mut line).await?;
    let status = line
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut len = 0usize;
    loop {
        line.clear();
        if r.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; len];
    r.read_exact(&mut body).await?;
    Ok(status)
}

/// `clients` connections, each sending `per_client` `GET path` one after
/// the other on one keep-alive connection.
pub async fn http_load(addr: SocketAddr, path: &str, clients: usize, per_client: usize) -> Run {
    let req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").into_bytes();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let req = req.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(per_client);
            let mut failed = 0;
            let Ok(s) = TcpStream::connect(addr).await else {
                return (lat, per_client);
            };
            let _ = s.set_nodelay(true);
            let (r, mut w) = s.into_split();
            let mut r = BufReader::new(r);
            for _ in 0..per_client {
                let t = Instant::now();
                match get(&mut r, &mut w, &req).await {
                    Ok(200) => lat.push(t.elapsed()),
                    _ => failed += 1,
                }
            }
            (lat, failed)
        }));
    }
    let mut run = Run {
        ok: 0,
        failed: 0,
        wall: Duration::ZERO,
        latencies: Vec::new(),
    };
    for t in tasks {
        if let Ok((lat, failed)) = t.await {
            run.ok += lat.len();
            run.failed += failed;
            run.latencies.extend(lat);
        }
    }
    run.wall = start.elapsed();
    run
}

async fn ws_session(
    addr: SocketAddr,
    token: &str,
    session: &str,
    turns: usize,
) -> Result<Vec<Duration>, String> {
    let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    // As a browser does: a message is sent when it is written.
    let _ = stream.set_nodelay(true);
    let req = tungstenite::handshake::client::Request::builder()
        .uri(format!("ws://{addr}/ws"))
        .header("Host", addr.to_string())
        .header("Connection", "Upgrade")
        .header("Upgrade", "websocket")
        .header("Sec-WebSocket-Version", "13")
        .header(
            "Sec-WebSocket-Key",
            tungstenite::handshake::client::generate_key(),
        )
        .header("Origin", format!("http://{addr}"))
        .header(
            "Sec-WebSocket-Protocol",
            format!("pincer.v1, bearer.{token}"),
        )
        .body(())
        .map_err(|e| e.to_string())?;
    let (mut ws, _) = tokio_tungstenite::client_async(req, stream)
        .await
        .map_err(|e| e.to_string())?;
    let mut lat = Vec::with_capacity(turns);
    for _ in 0..turns {
        let t = Instant::now();
        let msg = serde_json::json!({"type": "turn", "session": session, "text": "hello"});
        ws.send(Message::Text(msg.to_string().into()))
            .await
            .map_err(|e| e.to_string())?;
        loop {
            match ws.next().await {
                Some(Ok(Message::Text(t))) => {
                    let v: serde_json::Value =
                        serde_json::from_str(&t).map_err(|e| e.to_string())?;
                    match v["event"].as_str() {
                        Some("turn_done") => break,
                        Some("turn_failed" | "error") => return Err(v.to_string()),
                        _ => {}
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e.to_string()),
                None => return Err("closed".into()),
            }
        }
        lat.push(t.elapsed());
    }
    let _ = ws.close(None).await;
    Ok(lat)
}

/// `sessions` WebSocket chat sessions at once (each its own session key),
/// `turns` turns each; latency is per turn (send to `turn_done`).
pub async fn ws_load(
    addr: SocketAddr,
    token: &str,
    sessions: usize,
    turns: usize,
) -> (Run, Vec<String>) {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..sessions {
        let token = token.to_string();
        tasks.push(tokio::spawn(async move {
            ws_session(addr, &token, &format!("load-{i}"), turns).await
        }));
    }
    let mut run = Run {
        ok: 0,
        failed: 0,
        wall: Duration::ZERO,
        latencies: Vec::new(),
    };
    let mut errors = Vec::new();
    for t in tasks {
        match t.await {
            Ok(Ok(lat)) => {
                run.ok += lat.len();
                run.latencies.extend(lat);
            }
            Ok(Err(e)) => {
                run.failed += turns;
                errors.push(e);
            }
            Err(e) => {
                run.failed += turns;
                errors.push(e.to_string());
            }
        }
    }
    run.wall = start.elapsed();
    (run, errors)
}
