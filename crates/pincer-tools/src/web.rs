//! The `web_fetch` tool: one `GET` of a page on a domain the config allows,
//! returned as readable text (medium risk: it sends a request out).
//!
//! What it refuses, each with a tool error naming the reason:
//! - a host not on `[web_fetch] allow_domains` (an empty list: the tool is
//!   not built at all), at the first request and at every redirect, which
//!   are followed by hand, never by the HTTP client;
//! - a host that is, or resolves to, a loopback, private, link-local
//!   (`169.254.169.254`, the cloud metadata address), shared (CGNAT),
//!   unspecified, multicast, broadcast or reserved address, unless that
//!   address is in `allow_addresses` (server-side request forgery). Every
//!   resolved address is checked, and the request goes to exactly the
//!   addresses checked: the client is pinned to them, so no second DNS
//!   lookup can answer differently;
//! - any scheme but `http`/`https`, and a URL with credentials in it.
//!
//! The body is read up to `max_bytes` and cut there with a note; the whole
//! fetch, redirects included, has `timeout_secs`. No proxy from the
//! environment is used (it would connect to addresses not checked here).

use pincer_core::config::{ConfigError, Source};
use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use toml::Spanned;

/// The top-level key this module owns.
pub const SECTION: &str = "web_fetch";

/// The `[web_fetch]` section as `pincer init` writes it (commented).
#[cfg(feature = "web")]
pub const EXAMPLE_TOML: &str = r#"
# The web_fetch tool: GET a page and read it as text. Off (not offered to
# the agent) until allow_domains names a domain. Loopback, private,
# link-local (169.254.169.254), CGNAT, multicast and unspecified addresses
# are refused whatever the domain resolves to, unless allow_addresses
# lists them. Redirects are re-checked at every hop.
#
# [web_fetch]
# allow_domains = ["example.com", "*.wikipedia.org"]  # "*." = subdomains
# allow_addresses = []         # e.g. ["192.168.1.10", "10.0.0.0/8"]
# max_bytes = 1048576          # body bytes read; the rest is cut, and said
# timeout_secs = 20            # the whole fetch, redirects included
# max_redirects = 5
"#;

/// Without the tool there is nothing to configure.
#[cfg(not(feature = "web"))]
pub const EXAMPLE_TOML: &str = "";

/// An address range: `addr/prefix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    /// Whether `ip` is in the range (an IPv4-mapped IPv6 address counts as
    /// its IPv4 address).
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.addr, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for Cidr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl std::str::FromStr for Cidr {
    type Err = String;
    fn from_str(s: &str) -> Result<Cidr, String> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse()
            .map_err(|_| format!("`{s}` is not an IP address or ADDRESS/PREFIX"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("`{s}`: the prefix must be 0 to {max}"))?,
        };
        Ok(Cidr {
            addr: canonical(addr),
            prefix,
        })
    }
}

impl Serialize for Cidr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// `[web_fetch]`, validated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WebFetchConfig {
    /// Hosts the tool may fetch from, lowercase: `example.com` (that host
    /// only), `*.example.com` (its subdomains, not itself), or an IP
    /// literal. Empty: the tool is off.
    pub allow_domains: Vec<String>,
    /// Addresses in the refused ranges that may be reached anyway.
    pub allow_addresses: Vec<Cidr>,
    pub max_bytes: usize,
    pub timeout_secs: u64,
    pub max_redirects: u32,
}

impl Default for WebFetchConfig {
    fn default() -> WebFetchConfig {
        WebFetchConfig {
            allow_domains: Vec::new(),
            allow_addresses: Vec::new(),
            max_bytes: 1024 * 1024,
            timeout_secs: 20,
            max_redirects: 5,
        }
    }
}

impl WebFetchConfig {
    /// Whether the tool is on: some domain is allowed.
    pub fn enabled(&self) -> bool {
        !self.allow_domains.is_empty()
    }

    /// Whether `host` (lowercase, no trailing dot) is allowed.
    pub fn allows_host(&self, host: &str) -> bool {
        self.allow_domains
            .iter()
            .any(|d| match d.strip_prefix("*.") {
                Some(parent) => host
                    .strip_suffix(parent)
                    .is_some_and(|sub| sub.len() > 1 && sub.ends_with('.')),
                None => d == host,
            })
    }

    #[cfg(feature = "web")]
    fn allows_address(&self, ip: IpAddr) -> bool {
        self.allow_addresses.iter().any(|c| c.contains(ip))
    }
}

#[derive(Deserialize, Default)]
struct RawDoc {
    #[serde(default)]
    web_fetch: Option<RawWebFetch>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawWebFetch {
    allow_domains: Option<Vec<Spanned<String>>>,
    allow_addresses: Option<Vec<Spanned<String>>>,
    max_bytes: Option<Spanned<u64>>,
    timeout_secs: Option<Spanned<u64>>,
    max_redirects: Option<Spanned<u64>>,
}

/// Parses and validates `[web_fetch]` of `src` (absent: the defaults, off).
pub fn parse_section(src: &Source<'_>) -> Result<WebFetchConfig, ConfigError> {
    if !cfg!(feature = "web") && pincer_core::config::locate(src.text, SECTION).is_some() {
        return Err(src.invalid_at(
            SECTION,
            "configures web_fetch, but this pincer was built without it (cargo feature `web`)",
        ));
    }
    let raw: RawDoc = src.raw()?;
    let mut out = WebFetchConfig::default();
    let Some(raw) = raw.web_fetch else {
        return Ok(out);
    };
    for d in raw.allow_domains.iter().flatten() {
        let name = normalize_domain(d.get_ref())
            .map_err(|why| src.invalid(d.span(), "web_fetch.allow_domains", why))?;
        out.allow_domains.push(name);
    }
    for a in raw.allow_addresses.iter().flatten() {
        let cidr = a
            .get_ref()
            .parse::<Cidr>()
            .map_err(|why| src.invalid(a.span(), "web_fetch.allow_addresses", why))?;
        out.allow_addresses.push(cidr);
    }
    let caps = [
        ("web_fetch.max_bytes", &raw.max_bytes, 1, 256 * 1024 * 1024),
        ("web_fetch.timeout_secs", &raw.timeout_secs, 1, 3600),
        ("web_fetch.max_redirects", &raw.max_redirects, 0, 20),
    ];
    for (key, value, min, max) in caps {
        let Some(v) = value else { continue };
        let n = *v.get_ref();
        if n < min || n > max {
            return Err(src.invalid(v.span(), key, format!("is {n}; it must be {min} to {max}")));
        }
        match key {
            "web_fetch.max_bytes" => out.max_bytes = usize::try_from(n).unwrap_or(usize::MAX),
            "web_fetch.timeout_secs" => out.timeout_secs = n,
            // At most 20, checked above.
            _ => out.max_redirects = u32::try_from(n).unwrap_or(20),
        }
    }
    Ok(out)
}

/// An allowlist entry, lowercased, or why it is not one.
fn normalize_domain(entry: &str) -> Result<String, String> {
    let e = entry.trim().trim_end_matches('.').to_ascii_lowercase();
    if e.is_empty() || e == "*" || e == "*." {
        return Err(format!(
            "`{entry}` allows no host or every host; name the domains (`example.com`, `*.example.com`)"
        ));
    }
    if e.contains("://") || e.contains('/') || e.contains('@') {
        return Err(format!(
            "`{entry}` must be a host name (`example.com`), not a URL"
        ));
    }
    let bare = e.strip_prefix("*.").unwrap_or(&e);
    if let Ok(ip) = bare
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
    {
        if bare != e {
            return Err(format!(
                "`{entry}`: `*.` goes before a domain, not an address"
            ));
        }
        return Ok(canonical(ip).to_string());
    }
    let ok = bare.split('.').all(|label| {
        !label.is_empty()
            && label
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    });
    if !ok {
        return Err(format!(
            "`{entry}` is not a host name (letters, digits, `-` and dots; no port)"
        ));
    }
    Ok(e)
}

/// `ip` with an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6
            .to_ipv4_mapped()
            .map(IpAddr::V4)
            .unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    }
}

/// Why a request to `ip` is refused unless explicitly allowed, or `None`
/// for a public address.
pub fn refused_range(ip: IpAddr) -> Option<&'static str> {
    match canonical(ip) {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() || a == 0 {
        Some("unspecified (\"this network\")")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local (cloud metadata lives here)")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if ip.is_broadcast() {
        Some("broadcast")
    } else if a >= 240 {
        Some("reserved")
    } else {
        None
    }
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let seg = ip.segments();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_unspecified() {
        Some("unspecified")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if seg[0] & 0xffc0 == 0xfe80 || seg[0] & 0xffc0 == 0xfec0 {
        Some("link-local")
    } else if seg[0] & 0xfe00 == 0xfc00 {
        Some("private (unique local)")
    } else if seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6] == [0, 0, 0, 0] {
        // NAT64: the IPv4 address it carries decides.
        let [.., x, y] = seg;
        refused_v4(Ipv4Addr::from((u32::from(x) << 16) | u32::from(y)))
    } else {
        None
    }
}

#[cfg(feature = "web")]
pub use fetch::{StaticHosts, WebFetch};

/// The tool (feature `web`). Without it the config is still read, so that
/// a `[web_fetch]` table is refused by name instead of ignored.
#[cfg(feature = "web")]
mod fetch {
    use super::*;
    use crate::args::{Args, object_schema, respond};
    use pincer_core::gate::{Gated, Permit};
    use pincer_core::policy::Risk;
    use pincer_core::provider::BoxFuture;
    use pincer_core::tool::{Assessment, Tool, ToolError};
    use reqwest::Url;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;
    use std::net::{IpAddr, SocketAddr};
    use std::time::Duration;
    /// Names answered without DNS (tests, or pinning a name on purpose).
    pub type StaticHosts = BTreeMap<String, Vec<IpAddr>>;

    /// `web_fetch {url}`.
    #[derive(Debug)]
    pub struct WebFetch {
        cfg: Gated<WebFetchConfig>,
        hosts: StaticHosts,
    }

    impl WebFetch {
        pub fn new(cfg: WebFetchConfig) -> WebFetch {
            WebFetch {
                cfg: Gated::new(cfg),
                hosts: StaticHosts::new(),
            }
        }

        /// Answers these names from `hosts` instead of DNS (their addresses
        /// are checked like any other).
        pub fn with_static_hosts(mut self, hosts: StaticHosts) -> WebFetch {
            self.hosts = hosts;
            self
        }
    }

    const PARAMS: &[&str] = &["url"];

    impl Tool for WebFetch {
        fn name(&self) -> &str {
            "web_fetch"
        }

        fn description(&self) -> &str {
            "Fetch a web page (HTTP GET) and return it as readable text. Only domains the \
         configuration allows can be fetched; private and local addresses are refused. \
         Long pages are cut."
        }

        fn parameters_schema(&self) -> Value {
            object_schema(
                &[(
                    "url",
                    json!({"type": "string", "description": "An http:// or https:// URL"}),
                )],
                &["url"],
            )
        }

        fn assess(&self, args: &Value) -> Assessment {
            let a = Assessment::new(
                Risk::Medium,
                "fetching a web page sends a request off this machine to an allowed domain (medium risk)",
            );
            let url = Args::parse("web_fetch", args, PARAMS)
                .and_then(|a| a.req_str("url").map(str::to_string));
            match url {
                Err(e) => a.with_invalid(e.to_string()),
                Ok(u) => match Url::parse(&u) {
                    Err(e) => a.with_invalid(format!(
                        "web_fetch: {}",
                        pincer_providers::url_error(&u, &e)
                    )),
                    Ok(parsed) => a.with_subject(json!({
                        "url": u,
                        "host": parsed.host_str().unwrap_or_default(),
                    })),
                },
            }
        }

        fn execute<'a>(&'a self, permit: Permit<'a>) -> BoxFuture<'a, Result<String, ToolError>> {
            Box::pin(async move {
                let a = Args::parse("web_fetch", permit.args(), PARAMS)?;
                let url = a.req_str("url")?.to_string();
                let cfg = permit.open(&self.cfg);
                let cap = Duration::from_secs(cfg.timeout_secs);
                match tokio::time::timeout(cap, fetch(cfg, &self.hosts, &url)).await {
                    Ok(r) => r,
                    Err(_) => Err(respond(format!(
                        "web_fetch: {url}: no complete answer within {}s (the [web_fetch] timeout_secs cap); nothing is returned",
                        cfg.timeout_secs
                    ))),
                }
            })
        }
    }

    /// Where one request may go: the URL's host and the checked addresses.
    struct Target {
        /// The host exactly as the URL spells it (a trailing dot included):
        /// the key reqwest looks its address overrides up by, so the pin
        /// cannot miss and fall through to DNS.
        host: String,
        addrs: Vec<SocketAddr>,
        literal: bool,
    }

    /// Checks `url` against the config and resolves it; every refusal names
    /// the URL and the reason.
    async fn check(
        cfg: &WebFetchConfig,
        hosts: &StaticHosts,
        url: &Url,
    ) -> Result<Target, ToolError> {
        let refuse = |why: String| respond(format!("web_fetch: refused {url}: {why}"));
        if !matches!(url.scheme(), "http" | "https") {
            return Err(refuse(format!(
                "the scheme `{}` is not fetched (only http and https)",
                url.scheme()
            )));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(refuse("a URL with credentials in it is not fetched".into()));
        }
        let port = url
            .port_or_known_default()
            .ok_or_else(|| refuse("no port".into()))?;
        let raw_host = url.host_str().unwrap_or_default().to_string();
        let (host, literal) = match url.host() {
            Some(url::Host::Domain(d)) => (d.trim_end_matches('.').to_ascii_lowercase(), None),
            Some(url::Host::Ipv4(ip)) => (ip.to_string(), Some(IpAddr::V4(ip))),
            Some(url::Host::Ipv6(ip)) => {
                (canonical(IpAddr::V6(ip)).to_string(), Some(IpAddr::V6(ip)))
            }
            None => return Err(refuse("the URL has no host".into())),
        };
        if !cfg.allows_host(&host) {
            return Err(refuse(format!(
                "the host `{host}` is not on [web_fetch] allow_domains"
            )));
        }
        let ips: Vec<IpAddr> = match literal {
            Some(ip) => vec![ip],
            None => match hosts.get(&host) {
                Some(ips) => ips.clone(),
                None => tokio::net::lookup_host((host.as_str(), port))
                    .await
                    .map_err(|e| refuse(format!("`{host}` does not resolve: {e}")))?
                    .map(|a| a.ip())
                    .collect(),
            },
        };
        if ips.is_empty() {
            return Err(refuse(format!("`{host}` resolves to no address")));
        }
        for ip in &ips {
            if let Some(range) = refused_range(*ip)
                && !cfg.allows_address(*ip)
            {
                return Err(refuse(format!(
                    "`{host}` is {ip}, a {range} address (not on [web_fetch] allow_addresses)"
                )));
            }
        }
        Ok(Target {
            host: raw_host,
            addrs: ips
                .into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect(),
            literal: literal.is_some(),
        })
    }

    /// A client that connects only to `t`'s checked addresses, follows no
    /// redirect and uses no proxy.
    fn client(url: &Url, t: &Target, timeout: Duration) -> Result<reqwest::Client, ToolError> {
        // Without the `tls` feature an https:// URL is refused here, saying so.
        let mut b = pincer_providers::client_builder("web_fetch", url.as_str())
            .map_err(|e| respond(format!("web_fetch: {url}: {e}")))?
            .user_agent(concat!(
                "pincer/",
                env!("CARGO_PKG_VERSION"),
                " (web_fetch)"
            ))
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy();
        if !t.literal {
            b = b.resolve_to_addrs(&t.host, &t.addrs);
        }
        b.build()
            .map_err(|e| ToolError::Fatal(format!("web_fetch: cannot build the HTTP client: {e}")))
    }

    use pincer_providers::error_chain as chain;

    async fn fetch(
        cfg: &WebFetchConfig,
        hosts: &StaticHosts,
        start: &str,
    ) -> Result<String, ToolError> {
        let mut url = Url::parse(start).map_err(|e| {
            respond(format!(
                "web_fetch: {}",
                pincer_providers::url_error(start, &e)
            ))
        })?;
        let timeout = Duration::from_secs(cfg.timeout_secs);
        let mut hops: Vec<String> = Vec::new();
        loop {
            let target =
                check(cfg, hosts, &url)
                    .await
                    .map_err(|e| match (&e, hops.is_empty()) {
                        (ToolError::RespondToModel(m), false) => {
                            respond(format!("{m} (reached by redirect from {start})"))
                        }
                        _ => e,
                    })?;
            let resp = client(&url, &target, timeout)?
                .get(url.clone())
                .send()
                .await
                .map_err(|e| respond(format!("web_fetch: {url}: {}", chain(&e))))?;
            let status = resp.status();
            let location = resp.headers().get(reqwest::header::LOCATION);
            if matches!(status.as_u16(), 301 | 302 | 303 | 307 | 308) {
                let Some(loc) = location.and_then(|l| l.to_str().ok()) else {
                    return Err(respond(format!(
                        "web_fetch: {url}: {status} without a readable Location"
                    )));
                };
                let next = url.join(loc).map_err(|e| {
                    respond(format!(
                        "web_fetch: {url}: {status} to `{loc}`, not a URL: {e}"
                    ))
                })?;
                if hops.len() >= cfg.max_redirects as usize {
                    return Err(respond(format!(
                        "web_fetch: {start}: more than {} redirects ([web_fetch] max_redirects)",
                        cfg.max_redirects
                    )));
                }
                hops.push(next.to_string());
                url = next;
                continue;
            }
            return read(cfg, url, hops, resp).await;
        }
    }

    async fn read(
        cfg: &WebFetchConfig,
        url: Url,
        hops: Vec<String>,
        mut resp: reqwest::Response,
    ) -> Result<String, ToolError> {
        let status = resp.status();
        let ctype = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let mut body = Vec::new();
        let mut cut = false;
        while let Some(chunk) = resp
            .chunk()
            .await
            .map_err(|e| respond(format!("web_fetch: {url}: reading the body: {}", chain(&e))))?
        {
            let room = cfg.max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                cut = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        let mut out = format!("{} {url}\n", status.as_u16());
        if !hops.is_empty() {
            out.push_str(&format!("redirected: {}\n", hops.join(" -> ")));
        }
        out.push_str(&format!(
            "content-type: {}\n",
            if ctype.is_empty() { "(none)" } else { &ctype }
        ));
        if cut {
            out.push_str(&format!(
            "[cut: the body is longer than {} bytes ([web_fetch] max_bytes); only the first {} bytes were read]\n",
            cfg.max_bytes, cfg.max_bytes
        ));
        }
        out.push('\n');
        out.push_str(&to_text(&ctype, &body)?);
        Ok(out)
    }

    /// The body as text: HTML made readable, other text as it is; binary
    /// content is not shown.
    fn to_text(ctype: &str, body: &[u8]) -> Result<String, ToolError> {
        let textual = ctype.is_empty()
            || ctype.starts_with("text/")
            || ctype.contains("json")
            || ctype.contains("xml")
            || ctype.contains("javascript");
        if !textual {
            return Ok(format!(
                "({} bytes of `{ctype}`, not text: not shown)",
                body.len()
            ));
        }
        if ctype.starts_with("text/html") || ctype.starts_with("application/xhtml") {
            return html_to_text(body);
        }
        Ok(String::from_utf8_lossy(body).into_owned())
    }

    #[cfg(feature = "html")]
    fn html_to_text(body: &[u8]) -> Result<String, ToolError> {
        html2text::from_read(body, 100)
            .map_err(|e| respond(format!("web_fetch: the HTML could not be read: {e}")))
    }

    #[cfg(not(feature = "html"))]
    fn html_to_text(body: &[u8]) -> Result<String, ToolError> {
        Ok(format!(
            "(raw HTML: this build has no HTML-to-text, feature `html`)\n{}",
            String::from_utf8_lossy(body)
        ))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use proptest::prelude::*;

        fn ip(s: &str) -> IpAddr {
            s.parse().expect("ip")
        }

        /// A build without TLS (pincer-providers' `tls` feature, off when this
        /// crate is tested alone) refuses an https:// page before connecting,
        /// naming the feature; it never fetches it in plain text.
        #[test]
        fn without_tls_an_https_page_is_refused_by_name() {
            if pincer_providers::TLS {
                return;
            }
            let url = Url::parse("https://example.com/").expect("url");
            let t = Target {
                host: "example.com".into(),
                addrs: vec![SocketAddr::new(ip("127.0.0.1"), 9)],
                literal: false,
            };
            let e = format!(
                "{:?}",
                client(&url, &t, Duration::from_secs(1)).expect_err("refused")
            );
            assert!(
                e.contains("https://example.com/") && e.contains("`tls` feature"),
                "{e}"
            );
            let plain = Url::parse("http://example.com/").expect("url");
            client(&plain, &t, Duration::from_secs(1)).expect("http:// is fine");
        }

        #[test]
        fn the_dangerous_ranges_are_refused_and_public_ones_are_not() {
            for a in [
                "127.0.0.1",
                "127.9.9.9",
                "::1",
                "0.0.0.0",
                "::",
                "10.1.2.3",
                "172.16.0.1",
                "192.168.1.1",
                "169.254.169.254",
                "100.64.0.1",
                "224.0.0.1",
                "255.255.255.255",
                "fe80::1",
                "fd00::1",
                "ff02::1",
                "::ffff:127.0.0.1",
                "::ffff:169.254.169.254",
                "64:ff9b::a9fe:a9fe",
            ] {
                assert!(refused_range(ip(a)).is_some(), "{a} must be refused");
            }
            for a in ["93.184.216.34", "1.1.1.1", "2606:4700::1111", "172.32.0.1"] {
                assert_eq!(refused_range(ip(a)), None, "{a}");
            }
        }

        #[test]
        fn the_allowlist_matches_hosts_and_subdomains_as_written() {
            let cfg = WebFetchConfig {
                allow_domains: vec!["example.com".into(), "*.wiki.org".into()],
                ..WebFetchConfig::default()
            };
            assert!(cfg.allows_host("example.com"));
            assert!(!cfg.allows_host("www.example.com"));
            assert!(!cfg.allows_host("badexample.com"));
            assert!(cfg.allows_host("en.wiki.org"));
            assert!(!cfg.allows_host("wiki.org"));
            assert!(!cfg.allows_host("evilwiki.org"));
        }

        #[test]
        fn bad_entries_are_refused_naming_the_field() {
            let path = std::path::Path::new("config.toml");
            for (text, key) in [
                ("[web_fetch]\nallow_domains = [\"*\"]\n", "allow_domains"),
                (
                    "[web_fetch]\nallow_domains = [\"https://x.org/\"]\n",
                    "allow_domains",
                ),
                (
                    "[web_fetch]\nallow_addresses = [\"10.0.0.0/33\"]\n",
                    "allow_addresses",
                ),
                ("[web_fetch]\nmax_bytes = 0\n", "max_bytes"),
                ("[web_fetch]\ntimeout = 3\n", "timeout"),
            ] {
                let err = parse_section(&Source::new(text, path))
                    .expect_err(text)
                    .to_string();
                assert!(err.contains(key), "{text}: {err}");
            }
            let ok = parse_section(&Source::new(
                "[web_fetch]\nallow_domains = [\"Example.COM.\", \"::1\"]\nallow_addresses = [\"127.0.0.1\", \"[::1]\"]\n",
                path,
            ))
            .expect("valid");
            assert_eq!(ok.allow_domains, ["example.com", "::1"]);
            assert!(ok.allows_address(ip("127.0.0.1")) && !ok.allows_address(ip("127.0.0.2")));
        }

        #[test]
        fn the_example_parses_once_uncommented() {
            let uncommented = crate::config::uncommented(EXAMPLE_TOML);
            let path = std::path::Path::new("config.toml");
            let c = parse_section(&Source::new(&uncommented, path)).expect(&uncommented);
            assert_eq!(c.allow_domains, ["example.com", "*.wikipedia.org"]);
            let d = WebFetchConfig::default();
            assert_eq!(
                (c.max_bytes, c.timeout_secs, c.max_redirects),
                (d.max_bytes, d.timeout_secs, d.max_redirects)
            );
        }

        proptest! {
            /// A range contains its own address and, exactly when the prefix
            /// says so, a neighbour differing in one bit.
            #[test]
            fn a_range_holds_what_its_prefix_says(raw in any::<u32>(), prefix in 0u8..=32, bit in 0u32..32) {
                let c = Cidr { addr: IpAddr::V4(Ipv4Addr::from(raw)), prefix };
                prop_assert!(c.contains(IpAddr::V4(Ipv4Addr::from(raw))));
                let other = Ipv4Addr::from(raw ^ (1 << bit));
                let inside = bit < 32 - u32::from(prefix);
                prop_assert_eq!(c.contains(IpAddr::V4(other)), inside);
            }
        }
    }
}
