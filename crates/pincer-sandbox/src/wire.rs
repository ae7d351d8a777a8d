//! The control channel between pincer and the helper, and between the
//! helper's two processes: a Unix socket pair given to the child as its
//! stdin. The parent writes one JSON request and shuts its side down; the
//! child answers with one JSON report before it exits — the init first
//! says, one JSON object a line, that it is starting the command and that
//! it has ([`InitMessage`]), then how it ended. Nothing else speaks on
//! it, and the command never has it (its stdin is `/dev/null`, or the
//! read end of a pipe pincer writes when the spec asks for
//! [`crate::Spec::pipe_stdin`]).
//!
//! Each request is preceded by one byte carrying descriptors
//! (`SCM_RIGHTS`, [`send_fds`]): to the outer helper, the command's stdin
//! pipe when piped (or none); to the init, the helpers' cgroups, then that
//! pipe.

use crate::report::{LayerStatus, Outcome};
use crate::spec::{Layer, Spec};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;

pub(crate) const PROTOCOL: u32 = 3;
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
    /// Per hierarchy, the cgroup the helper processes move to once the
    /// command runs (out of its limits), or why there is none.
    pub helper_cgroups: Vec<Result<PathBuf, String>>,
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
    /// The helpers' cgroups whose process lists were handed over with
    /// [`send_fds`], in that order (see `helper::apart`).
    pub apart: Vec<PathBuf>,
}

/// Init → outer helper, how the command ended.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InitReport {
    pub layers: Vec<LayerStatus>,
    pub landlock_abi: Option<u32>,
    pub outcome: Outcome,
    pub leftovers: u32,
    /// `note: …` lines for the result.
    pub notes: Vec<String>,
}

/// Init → outer helper, just before it starts the command: every layer is
/// in place. Should the init die before it can send its [`InitReport`]
/// (the OOM killer, where it can still choose the init), the outer helper
/// still knows the command was started, under which layers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InitReady {
    pub layers: Vec<LayerStatus>,
    pub landlock_abi: Option<u32>,
}

/// What the init sends, one JSON object a line: `ready` and `started`
/// (only when it got to starting the command), then `finished`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) enum InitMessage {
    Ready(InitReady),
    /// The command runs (it has been exec'd), and the init has tried to
    /// leave the run's cgroups.
    Started,
    Finished(InitReport),
}

/// What the init said, as far as it got.
#[derive(Debug)]
pub(crate) struct InitSaid {
    pub ready: Option<InitReady>,
    pub started: bool,
    /// Its final report, or why there is none.
    pub report: Result<InitReport, String>,
}

/// The init's messages in `buf` (see [`InitMessage`]).
pub(crate) fn parse_init(buf: &[u8]) -> InitSaid {
    let mut ready = None;
    let mut started = false;
    let mut finished = None;
    let mut bad = None;
    for line in buf.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        match parse::<InitMessage>(line) {
            Ok(InitMessage::Ready(r)) => ready = Some(r),
            Ok(InitMessage::Started) => started = true,
            Ok(InitMessage::Finished(r)) => finished = Some(r),
            Err(e) => bad = Some(e),
        }
    }
    let report = match (finished, bad) {
        (Some(r), _) => Ok(r),
        (None, Some(e)) => Err(e),
        (None, None) if ready.is_some() => Err(
            "it was starting the command, then closed the control socket without a report".into(),
        ),
        (None, None) => Err("the other side closed the control socket without a message".into()),
    };
    InitSaid {
        ready,
        started,
        report,
    }
}

/// At most this many descriptors go with [`send_fds`] (one per cgroup
/// hierarchy a run uses, two on a hybrid machine, and the stdin pipe).
const MAX_FDS: usize = 4;

/// Sends `fds` (at most [`MAX_FDS`]) with one byte, ahead of the request.
pub(crate) fn send_fds(stream: &UnixStream, fds: &[BorrowedFd<'_>]) -> Result<(), String> {
    use rustix::net::{SendAncillaryBuffer, SendAncillaryMessage, SendFlags};
    if fds.len() > MAX_FDS {
        return Err(format!("{} descriptors to pass, over {MAX_FDS}", fds.len()));
    }
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err("the descriptors do not fit the control message".into());
    }
    rustix::net::sendmsg(
        stream,
        &[IoSlice::new(b"F")],
        &mut control,
        SendFlags::empty(),
    )
    .map(|_| ())
    .map_err(|e| format!("cannot pass descriptors: {e}"))
}

/// Receives what [`send_fds`] sent, the descriptors close-on-exec.
pub(crate) fn recv_fds(stream: &UnixStream) -> Result<Vec<OwnedFd>, String> {
    use rustix::net::{RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags};
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    let got = loop {
        match rustix::net::recvmsg(
            stream,
            &mut [IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Err(rustix::io::Errno::INTR) => {}
            other => break other,
        }
    };
    match got {
        Ok(m) if m.bytes == 1 => {}
        Ok(_) => return Err("the control socket closed before the descriptors".into()),
        Err(e) => return Err(format!("cannot receive descriptors: {e}")),
    }
    let mut fds = Vec::new();
    for msg in control.drain() {
        if let RecvAncillaryMessage::ScmRights(rights) = msg {
            fds.extend(rights);
        }
    }
    Ok(fds)
}

/// Writes `value` as one line (JSON has no raw newline), leaving the
/// stream open for the next.
pub(crate) fn send_line<T: Serialize>(mut stream: &UnixStream, value: &T) -> Result<(), String> {
    let mut bytes = serde_json::to_vec(value).map_err(|e| format!("cannot encode: {e}"))?;
    bytes.push(b'\n');
    stream
        .write_all(&bytes)
        .map_err(|e| format!("cannot write the control socket: {e}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(m: &InitMessage) -> Vec<u8> {
        let mut v = serde_json::to_vec(m).expect("encodes");
        v.push(b'\n');
        v
    }

    fn ready() -> Vec<u8> {
        line(&InitMessage::Ready(InitReady {
            layers: vec![],
            landlock_abi: Some(7),
        }))
    }

    fn finished() -> Vec<u8> {
        line(&InitMessage::Finished(InitReport {
            layers: vec![],
            landlock_abi: Some(7),
            outcome: Outcome::Exited { code: 3 },
            leftovers: 0,
            notes: vec![],
        }))
    }

    #[test]
    fn the_inits_messages_are_read_as_far_as_it_got() {
        let started = line(&InitMessage::Started);
        // All: the final report, and the start is known.
        let all = parse_init(&[ready(), started.clone(), finished()].concat());
        assert_eq!(all.ready.map(|r| r.landlock_abi), Some(Some(7)));
        assert!(all.started);
        assert_eq!(
            all.report.expect("report").outcome,
            Outcome::Exited { code: 3 }
        );
        // A setup failure: only the report.
        let setup = parse_init(&finished());
        assert!(setup.ready.is_none() && !setup.started && setup.report.is_ok());
        // The init died while starting the command, or after.
        for got in [ready(), [ready(), started].concat()] {
            let died = parse_init(&got);
            assert!(died.ready.is_some());
            assert!(died.report.expect_err("no report").contains("starting"));
        }
        // Nothing at all, and a report cut short.
        let none = parse_init(b"");
        assert!(none.ready.is_none());
        assert!(none.report.expect_err("none").contains("without a message"));
        let mut cut = ready();
        cut.extend_from_slice(&finished()[..10]);
        let cut = parse_init(&cut);
        assert!(cut.ready.is_some() && cut.report.expect_err("cut").contains("malformed"));
    }

    #[test]
    fn a_pipe_travels_ahead_of_its_request_and_works_on_the_other_side() {
        let (a, b) = UnixStream::pair().expect("pair");
        let (mut read, write) = std::io::pipe().expect("pipe");
        send_fds(&a, &[std::os::fd::AsFd::as_fd(&write)]).expect("fds");
        send(&a, &serde_json::json!({"big": "x".repeat(100_000)})).expect("send");
        drop(write);
        let mut fds = recv_fds(&b).expect("recv fds");
        let v: serde_json::Value = recv(&b).expect("recv");
        assert_eq!(v["big"].as_str().map(str::len), Some(100_000));
        assert_eq!(fds.len(), 1);
        let mut w = std::fs::File::from(fds.remove(0));
        w.write_all(b"through").expect("write");
        drop(w);
        let mut got = String::new();
        read.read_to_string(&mut got).expect("read");
        assert_eq!(got, "through");
    }

    #[test]
    fn no_descriptor_is_an_empty_list_not_an_error() {
        let (a, b) = UnixStream::pair().expect("pair");
        send_fds(&a, &[]).expect("fds");
        send(&a, &serde_json::json!({"k": 1})).expect("send");
        assert!(recv_fds(&b).expect("recv fds").is_empty());
        let v: serde_json::Value = recv(&b).expect("recv");
        assert_eq!(v["k"], 1);
    }
}
