//! `web_fetch` against real HTTP servers on loopback, as an attacker would
//! use it: every SSRF attempt (loopback, `[::1]`, the metadata address,
//! names resolving there, redirects there or off the allowlist) must be
//! refused before a byte reaches the target, which the victim servers
//! prove by recording every request they get.
//!
//! The "public" server listens on 127.0.0.2, the one loopback address the
//! config lets through (`allow_addresses`), under the name `public.test`
//! (answered by the tool's static hosts, standing in for DNS). The victims
//! listen on 127.0.0.1 and [::1], which stay refused.

use crate::support::{call_through, full_gate};
use pincer_core::tool::{Tool, ToolError};
use pincer_tools::web::{Cidr, StaticHosts};
use pincer_tools::{WebFetch, WebFetchConfig};
use serde_json::json;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

enum Reply {
    Bytes(Vec<u8>),
    /// Headers, then silence that outlasts any cap.
    Slow,
}

type Routes = Arc<dyn Fn(&str) -> Reply + Send + Sync>;

/// An HTTP/1.1 server that records the path of every request it gets.
struct Server {
    addr: SocketAddr,
    hits: Arc<Mutex<Vec<String>>>,
}

impl Server {
    async fn start(bind: &str, routes: Routes) -> Server {
        let listener = TcpListener::bind(bind).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = Arc::new(Mutex::new(Vec::new()));
        let seen = hits.clone();
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let routes = routes.clone();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match sock.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let text = String::from_utf8_lossy(&head).into_owned();
                    let path = text.split(' ').nth(1).unwrap_or("").to_string();
                    seen.lock().unwrap().push(path.clone());
                    match routes(&path) {
                        Reply::Bytes(b) => {
                            let _ = sock.write_all(&b).await;
                        }
                        Reply::Slow => {
                            let _ = sock
                                .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 100\r\n\r\nstart")
                                .await;
                            tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                        }
                    }
                });
            }
        });
        Server { addr, hits }
    }

    fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }
}

fn response(status: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    Reply::Bytes(bytes)
}

fn redirect(to: &str) -> Reply {
    response("302 Found", &[("location", to)], b"")
}

const PAGE: &str = "<html><head><title>T</title><style>p{color:red}</style></head>\
    <body><h1>Hello from the page</h1><p>web fetch <b>works</b></p></body></html>";

/// The victims on 127.0.0.1 and [::1], the public server, and a tool
/// whose config allows `public.test`, the victims' literal hosts (so only
/// the address check stands between them and the tool), `localhost` and
/// the other test names, with `max_bytes` 1000 and a 1 s time cap.
struct Net {
    public: Server,
    v4: Server,
    v6: Server,
    tool: Arc<dyn Tool>,
    gate: Arc<pincer_core::gate::Gate>,
    _tmp: tempfile::TempDir,
}

async fn net() -> Net {
    let victim: Routes = Arc::new(|_| response("200 OK", &[], b"SECRET-ADMIN-PANEL"));
    let v4 = Server::start("127.0.0.1:0", victim.clone()).await;
    let v6 = Server::start("[::1]:0", victim).await;
    let (p4, p6) = (v4.addr.port(), v6.addr.port());
    // The public server learns its own port after binding: routes read it.
    let port = Arc::new(Mutex::new(0u16));
    let me = port.clone();
    let routes: Routes = Arc::new(move |path| {
        let own = *me.lock().unwrap();
        match path {
            "/page" => response(
                "200 OK",
                &[("content-type", "text/html; charset=utf-8")],
                PAGE.as_bytes(),
            ),
            "/hop" => redirect("/page"),
            "/to-v4" => redirect(&format!("http://127.0.0.1:{p4}/admin")),
            "/to-v6" => redirect(&format!("http://[::1]:{p6}/admin")),
            "/to-metadata" => redirect("http://169.254.169.254/latest/meta-data/"),
            "/to-localhost" => redirect(&format!("http://localhost:{p4}/admin")),
            "/to-other" => redirect(&format!("http://other.test:{own}/page")),
            "/loop" => redirect("/loop"),
            "/big" => response(
                "200 OK",
                &[("content-type", "text/plain")],
                &vec![b'x'; 100_000],
            ),
            "/slow" => Reply::Slow,
            _ => response("404 Not Found", &[], b"no"),
        }
    });
    let public = Server::start("127.0.0.2:0", routes).await;
    *port.lock().unwrap() = public.addr.port();
    let cfg = WebFetchConfig {
        allow_domains: [
            "public.test",
            "127.0.0.1",
            "::1",
            "169.254.169.254",
            "localhost",
            "metadata.test",
            "mixed.test",
        ]
        .map(String::from)
        .to_vec(),
        allow_addresses: vec!["127.0.0.2".parse::<Cidr>().unwrap()],
        max_bytes: 1000,
        timeout_secs: 1,
        max_redirects: 3,
    };
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    let hosts = StaticHosts::from([
        ("public.test".to_string(), vec![ip("127.0.0.2")]),
        ("other.test".to_string(), vec![ip("127.0.0.2")]),
        ("metadata.test".to_string(), vec![ip("169.254.169.254")]),
        // A name with one good and one bad address is refused whole.
        (
            "mixed.test".to_string(),
            vec![ip("127.0.0.2"), ip("127.0.0.1")],
        ),
    ]);
    let tool: Arc<dyn Tool> = Arc::new(WebFetch::new(cfg).with_static_hosts(hosts));
    let tmp = tempfile::tempdir().unwrap();
    let gate = full_gate(&tmp.path().join("audit"));
    Net {
        public,
        v4,
        v6,
        tool,
        gate,
        _tmp: tmp,
    }
}

impl Net {
    fn url(&self, path: &str) -> String {
        format!("http://public.test:{}{path}", self.public.addr.port())
    }

    async fn fetch(&self, url: &str) -> Result<String, ToolError> {
        call_through(&self.gate, self.tool.clone(), json!({ "url": url })).await
    }

    async fn refused(&self, url: &str, needle: &str) -> String {
        match self.fetch(url).await {
            Err(ToolError::RespondToModel(m)) => {
                assert!(m.contains(needle), "{url}: expected {needle:?} in {m:?}");
                assert!(!m.contains("SECRET-ADMIN-PANEL"), "{m}");
                m
            }
            other => panic!("{url}: expected a refusal, got {other:?}"),
        }
    }

    /// No request reached a victim.
    fn victims_untouched(&self) {
        assert_eq!(
            self.v4.hits(),
            Vec::<String>::new(),
            "127.0.0.1 was reached"
        );
        assert_eq!(self.v6.hits(), Vec::<String>::new(), "[::1] was reached");
    }
}

#[tokio::test]
async fn an_allowed_page_comes_back_as_readable_text_and_redirects_within_the_allowlist_work() {
    let n = net().await;
    let out = n.fetch(&n.url("/page")).await.unwrap();
    assert!(out.starts_with("200 http://public.test:"), "{out}");
    assert!(
        out.contains("Hello from the page") && out.contains("works"),
        "{out}"
    );
    assert!(!out.contains("<h1>") && !out.contains("color:red"), "{out}");
    // public.test is in no DNS: the page arrives only because the client
    // connects to the address the check resolved, the trailing-dot
    // spelling included.
    let dotted = format!("http://public.test.:{}/page", n.public.addr.port());
    assert!(
        n.fetch(&dotted)
            .await
            .unwrap()
            .contains("Hello from the page")
    );
    let out = n.fetch(&n.url("/hop")).await.unwrap();
    assert!(
        out.contains("redirected: ") && out.contains("Hello from the page"),
        "{out}"
    );
    assert_eq!(n.public.hits(), ["/page", "/page", "/hop", "/page"]);
}

#[tokio::test]
async fn loopback_and_metadata_addresses_are_refused_before_any_connection() {
    let n = net().await;
    let (p4, p6) = (n.v4.addr.port(), n.v6.addr.port());
    n.refused(
        &format!("http://127.0.0.1:{p4}/admin"),
        "a loopback address",
    )
    .await;
    n.refused(&format!("http://[::1]:{p6}/admin"), "a loopback address")
        .await;
    n.refused(&format!("http://[::ffff:127.0.0.1]:{p4}/admin"), "loopback")
        .await;
    n.refused("http://169.254.169.254/latest/meta-data/", "link-local")
        .await;
    n.victims_untouched();
}

#[tokio::test]
async fn names_resolving_to_refused_addresses_are_refused() {
    let n = net().await;
    let p4 = n.v4.addr.port();
    // Real resolution through the system's resolver.
    n.refused(&format!("http://localhost:{p4}/admin"), "`localhost` is ")
        .await;
    // A trailing dot or capitals name the same host: still checked.
    n.refused(&format!("http://localhost.:{p4}/admin"), "`localhost` is ")
        .await;
    n.refused(&format!("http://LOCALHOST:{p4}/admin"), "`localhost` is ")
        .await;
    n.refused(
        "http://metadata.test/latest/",
        "`metadata.test` is 169.254.169.254",
    )
    .await;
    n.refused(
        &format!("http://mixed.test:{p4}/admin"),
        "`mixed.test` is 127.0.0.1",
    )
    .await;
    n.victims_untouched();
    assert_eq!(
        n.public.hits(),
        Vec::<String>::new(),
        "mixed.test was fetched"
    );
}

#[tokio::test]
async fn redirects_to_refused_addresses_or_off_the_allowlist_are_refused() {
    let n = net().await;
    for (path, needle) in [
        ("/to-v4", "127.0.0.1, a loopback address"),
        ("/to-v6", "::1, a loopback address"),
        ("/to-metadata", "169.254.169.254, a link-local"),
        ("/to-localhost", "`localhost` is "),
        (
            "/to-other",
            "`other.test` is not on [web_fetch] allow_domains",
        ),
    ] {
        let m = n.refused(&n.url(path), needle).await;
        assert!(m.contains("reached by redirect from"), "{m}");
    }
    n.victims_untouched();
    // other.test is the very server public.test is: it was not asked twice.
    assert_eq!(
        n.public.hits(),
        [
            "/to-v4",
            "/to-v6",
            "/to-metadata",
            "/to-localhost",
            "/to-other"
        ]
    );
    n.refused(&n.url("/loop"), "more than 3 redirects").await;
}

#[tokio::test]
async fn a_domain_off_the_allowlist_and_other_schemes_are_refused() {
    let n = net().await;
    let port = n.public.addr.port();
    n.refused(
        &format!("http://other.test:{port}/page"),
        "the host `other.test` is not on [web_fetch] allow_domains",
    )
    .await;
    n.refused(
        &format!("http://www.public.test:{port}/page"),
        "not on [web_fetch] allow_domains",
    )
    .await;
    n.refused("file:///etc/passwd", "the scheme `file` is not fetched")
        .await;
    n.refused(
        &format!("http://user:pw@public.test:{port}/page"),
        "credentials",
    )
    .await;
    // Malformed arguments are refused by the gate before the tool runs.
    n.refused("not a url", "is not a URL").await;
    match call_through(&n.gate, n.tool.clone(), json!({"url": 7})).await {
        Err(ToolError::RespondToModel(m)) => assert!(m.contains("`url`"), "{m}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(n.public.hits(), Vec::<String>::new());
}

#[tokio::test]
async fn a_body_over_the_cap_is_cut_with_a_note() {
    let n = net().await;
    let out = n.fetch(&n.url("/big")).await.unwrap();
    assert!(
        out.contains("[cut: the body is longer than 1000 bytes"),
        "{out}"
    );
    let body = out.split("\n\n").nth(1).unwrap();
    assert_eq!(body, "x".repeat(1000));
}

#[tokio::test]
async fn a_slow_server_hits_the_time_cap() {
    let n = net().await;
    let m = n
        .refused(&n.url("/slow"), "no complete answer within 1s")
        .await;
    assert!(m.contains("timeout_secs"), "{m}");
}
