//! The control channel between pincer and the helper, and between the
//! helper's two processes: a Unix socket pair given to the child as its
//! stdin. The parent writes one JSON request and shuts its side down; the
//! child answers with one JSON report before it exits. Nothing else speaks
//! on it, and the command never has it (its stdin is `/dev/null`).

use crate::report::{LayerStatus, Outcome};
use crate::spec::{Layer, Spec};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

pub(crate) const PROTOCOL: u32 = 1;
/// Largest message either side accepts.
pub(crate) const MAX_MESSAGE: usize = 1 << 20;
/// Largest request pincer writes before the helper runs: it must fit in the
/// socket's buffer (Linux gives a Unix stream socket about 200 KiB).
pub(crate) const MAX_REQUEST: usize = 128 * 1024;

/// pincer → outer helper.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OuterRequest {
    pub version: u32,
    pub spec: Spec,
    /// cgroup directories to join first, with the layers each serves.
    pub cgroups: Vec<(PathBuf, Vec<Layer>)>,
    /// Layer statuses decided on pincer's side (the cgroup limits).
    pub pre: Vec<LayerStatus>,
}

/// Outer helper → init (PID 1 of the new namespace).
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InitRequest {
    pub version: u32,
    pub spec: Spec,
    /// What the outer helper applied (the init decides on /proc and the
    /// memory stand-in from it).
    pub layers: Vec<LayerStatus>,
    pub root: bool,
}

/// Init → outer helper.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InitReport {
    pub layers: Vec<LayerStatus>,
    pub landlock_abi: Option<u32>,
    pub outcome: Outcome,
    pub leftovers: u32,
}

/// Writes `value` and shuts the writing side down, so the reader sees EOF.
pub(crate) fn send<T: Serialize>(mut stream: &UnixStream, value: &T) -> Result<(), String> {
    let bytes = serde_json::to_vec(value).map_err(|e| format!("cannot encode: {e}"))?;
    stream
        .write_all(&bytes)
        .map_err(|e| format!("cannot write the control socket: {e}"))?;
    stream
        .shutdown(std::net::Shutdown::Write)
        .map_err(|e| format!("cannot shut the control socket down: {e}"))
}

/// Reads one message to EOF (at most [`MAX_MESSAGE`] bytes) and parses it.
pub(crate) fn recv<T: DeserializeOwned>(stream: &UnixStream) -> Result<T, String> {
    let mut buf = Vec::new();
    stream
        .take(MAX_MESSAGE as u64 + 1)
        .read_to_end(&mut buf)
        .map_err(|e| format!("cannot read the control socket: {e}"))?;
    parse(&buf)
}

pub(crate) fn parse<T: DeserializeOwned>(buf: &[u8]) -> Result<T, String> {
    if buf.len() > MAX_MESSAGE {
        return Err(format!("control message over {MAX_MESSAGE} bytes"));
    }
    if buf.is_empty() {
        return Err("the other side closed the control socket without a message".into());
    }
    serde_json::from_slice(buf).map_err(|e| format!("malformed control message: {e}"))
}

/// Reads what is already in the socket without waiting (the writer has
/// exited: all it wrote is there, or nothing is).
pub(crate) fn drain_now(stream: &UnixStream) -> Vec<u8> {
    let mut out = Vec::new();
    if stream.set_nonblocking(true).is_err() {
        return out;
    }
    let mut buf = [0u8; 16 * 1024];
    let mut s = stream;
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if out.len() > MAX_MESSAGE {
                    break;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    out
}

/// True when the peer of `stream` is gone entirely (its process exited or
/// closed every copy), as opposed to having only shut its writing side.
pub(crate) fn peer_gone(stream: &UnixStream) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let mut fds = [PollFd::new(stream, PollFlags::empty())];
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    match rustix::event::poll(&mut fds, Some(&zero)) {
        Ok(_) => fds[0].revents().contains(PollFlags::HUP),
        Err(_) => false,
    }
}
