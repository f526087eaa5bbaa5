//! Which URLs an authorization may reach: the rule every URL a server names during discovery,
//! registration, authorization and token exchange is held to before anything is sent to it.
//!
//! - **Scheme** (OAuth 2.1 §1.5): `https`, or `http` only for a loopback host (`localhost`,
//!   `127.0.0.0/8`, `[::1]`); a code, a verifier, a refresh token or a secret never travels in
//!   clear text to another machine.
//! - **Address**: a URL whose host resolves to a loopback, private, link-local or otherwise
//!   non-public address is refused unless the MCP endpoint itself resolves to an address of
//!   that class (a server on a laptop or a company network may keep its authorization server
//!   beside it; a public server may not point the client at the cloud's metadata service or at
//!   the user's router). The check is made on the resolved addresses, and again by the HTTP
//!   client's resolver when it connects (`GuardedResolver`), so a name that resolves to a
//!   public address for the check and to a private one for the connection is refused too.
//!
//! Not here: bounds on size and time (the flow's HTTP client), redirects (never followed).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::Url;

/// The kind of network an address belongs to, as the address policy sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddressClass {
    /// This machine: `127.0.0.0/8`, `::1`, and the unspecified `0.0.0.0/8` and `::` (which
    /// reach this machine when connected to).
    Loopback,
    /// A private network: `10/8`, `172.16/12`, `192.168/16`, the shared `100.64/10`,
    /// unique-local `fc00::/7`.
    Private,
    /// A link: `169.254/16` (where clouds serve instance metadata), `fe80::/10`.
    LinkLocal,
    /// Multicast, broadcast, documentation and reserved ranges: never reached.
    Special,
    /// Everything else.
    Public,
}

impl AddressClass {
    /// The class of `ip` (an IPv4 address mapped or translated into IPv6 is classed as the
    /// IPv4 address it carries).
    pub fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(v4) => Self::of_v4(v4),
            IpAddr::V6(v6) => Self::of_v6(v6),
        }
    }

    fn of_v4(ip: Ipv4Addr) -> Self {
        let [a, b, c, _] = ip.octets();
        if ip.is_loopback() || a == 0 {
            AddressClass::Loopback
        } else if ip.is_private() || (a == 100 && (64..128).contains(&b)) {
            AddressClass::Private
        } else if ip.is_link_local() {
            AddressClass::LinkLocal
        } else if ip.is_multicast()
            || ip.is_broadcast()
            || ip.is_documentation()
            || a >= 240
            || (a == 192 && b == 0 && c == 0)
            || (a == 198 && (b == 18 || b == 19))
        {
            AddressClass::Special
        } else {
            AddressClass::Public
        }
    }

    fn of_v6(ip: Ipv6Addr) -> Self {
        if let Some(v4) = ip.to_ipv4_mapped() {
            return Self::of_v4(v4);
        }
        let s = ip.segments();
        // NAT64's well-known prefix 64:ff9b::/96 carries an IPv4 address.
        if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
            let [a, b] = s[6].to_be_bytes();
            let [c, d] = s[7].to_be_bytes();
            return Self::of_v4(Ipv4Addr::new(a, b, c, d));
        }
        if ip.is_loopback() || ip.is_unspecified() {
            AddressClass::Loopback
        } else if s[0] & 0xfe00 == 0xfc00 {
            AddressClass::Private
        } else if s[0] & 0xffc0 == 0xfe80 {
            AddressClass::LinkLocal
        } else if ip.is_multicast() || s[0] == 0x2001 && s[1] == 0x0db8 {
            AddressClass::Special
        } else {
            AddressClass::Public
        }
    }

    fn bit(self) -> u8 {
        match self {
            AddressClass::Loopback => 1,
            AddressClass::Private => 2,
            AddressClass::LinkLocal => 4,
            AddressClass::Special => 8,
            AddressClass::Public => 16,
        }
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AddressClass::Loopback => "loopback",
            AddressClass::Private => "private",
            AddressClass::LinkLocal => "link-local",
            AddressClass::Special => "reserved",
            AddressClass::Public => "public",
        })
    }
}

/// The classes of address an authorization may reach: public ones, and those of the MCP
/// endpoint's own addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Reachable(u8);

impl Reachable {
    /// Public addresses only.
    pub const PUBLIC: Reachable = Reachable(16);
    /// Every address but multicast, broadcast and reserved ones (an explicit opt-out of the
    /// address rule, [`crate::auth::OAuthBuilder::allow_non_public_addresses`]).
    pub const ANY: Reachable = Reachable(1 | 2 | 4 | 16);

    /// Public addresses and the classes of `endpoint_addresses` (never [`AddressClass::Special`]).
    pub fn beside(endpoint_addresses: impl IntoIterator<Item = IpAddr>) -> Self {
        let mut bits = Self::PUBLIC.0;
        for ip in endpoint_addresses {
            let class = AddressClass::of(ip);
            if class != AddressClass::Special {
                bits |= class.bit();
            }
        }
        Reachable(bits)
    }

    /// Whether `ip` may be reached.
    pub fn allows(self, ip: IpAddr) -> bool {
        self.0 & AddressClass::of(ip).bit() != 0
    }
}

/// The rule a URL broke.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UrlRule {
    /// It is not an absolute URL.
    NotAUrl,
    /// Not `https`, nor `http` to a loopback host.
    Scheme {
        /// The scheme it has.
        scheme: String,
    },
    /// Its host resolves to an address of a class the endpoint is not in.
    Address {
        /// The address.
        address: IpAddr,
        /// Its class.
        class: AddressClass,
    },
    /// Its host could not be resolved.
    Unresolvable {
        /// Why.
        reason: String,
    },
}

impl fmt::Display for UrlRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UrlRule::NotAUrl => f.write_str("it is not an absolute URL"),
            UrlRule::Scheme { scheme } => write!(
                f,
                "its scheme is {scheme}: only https is allowed (http only for a loopback host)"
            ),
            UrlRule::Address { address, class } => write!(
                f,
                "its host resolves to the {class} address {address}, and the MCP server is not \
                 on a {class} address itself"
            ),
            UrlRule::Unresolvable { reason } => {
                write!(f, "its host could not be resolved ({reason})")
            }
        }
    }
}

/// Whether `host` names this machine without resolving anything: `localhost` (or a name
/// under `.localhost`, RFC 6761), or a loopback address.
pub fn is_loopback_host(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => {
            let d = d.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

/// Checks `url`'s scheme: `https`, or `http` to a loopback host.
pub fn check_scheme(url: &Url) -> Result<(), UrlRule> {
    match url.scheme() {
        "https" if url.host().is_some() => Ok(()),
        "http" if is_loopback_host(url) => Ok(()),
        other => Err(UrlRule::Scheme {
            scheme: other.to_owned(),
        }),
    }
}

/// The addresses `url`'s host stands for (resolved by the system when it is a name).
pub async fn addresses(url: &Url) -> Result<Vec<IpAddr>, UrlRule> {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => Ok(vec![IpAddr::V4(ip)]),
        Some(url::Host::Ipv6(ip)) => Ok(vec![IpAddr::V6(ip)]),
        Some(url::Host::Domain(name)) => {
            let port = url.port_or_known_default().unwrap_or(443);
            let found =
                tokio::net::lookup_host((name, port))
                    .await
                    .map_err(|e| UrlRule::Unresolvable {
                        reason: e.kind().to_string(),
                    })?;
            let ips: Vec<IpAddr> = found.map(|a| a.ip()).collect();
            if ips.is_empty() {
                return Err(UrlRule::Unresolvable {
                    reason: "no address".into(),
                });
            }
            Ok(ips)
        }
        None => Err(UrlRule::NotAUrl),
    }
}

/// Checks `url` against the scheme rule and, on its resolved addresses, the address rule.
pub async fn check(url: &Url, reachable: Reachable) -> Result<(), UrlRule> {
    check_scheme(url)?;
    for ip in addresses(url).await? {
        if !reachable.allows(ip) {
            return Err(UrlRule::Address {
                address: ip,
                class: AddressClass::of(ip),
            });
        }
    }
    Ok(())
}

/// The HTTP client's resolver under the address rule: the system's answer with every address
/// the rule refuses taken out (none left: the connection fails). A second line of defence
/// behind [`check`], for a name whose answer changes between the check and the connection.
#[derive(Clone, Debug)]
pub(crate) struct GuardedResolver {
    pub(crate) reachable: Reachable,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let reachable = self.reachable;
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let kept: Vec<SocketAddr> = found.filter(|a| reachable.allows(a.ip())).collect();
            if kept.is_empty() {
                return Err(Box::new(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "the host resolves only to addresses the authorization URL policy refuses",
                ))
                    as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(kept.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// A resolver for a reqwest client builder.
pub(crate) fn resolver(reachable: Reachable) -> Arc<GuardedResolver> {
    Arc::new(GuardedResolver { reachable })
}

/// `url` as it may be shown in an error or a log: without its user information (a password),
/// its query (a code, a state, a key) and its fragment.
pub fn redact(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    let had_query = shown.query().is_some();
    shown.set_query(None);
    shown.set_fragment(None);
    if had_query {
        format!("{shown}?…")
    } else {
        shown.to_string()
    }
}

/// [`redact`] of a string a server sent, which may not be a URL at all: one that does not
/// parse is cut at its first `?` or `#`, loses what stands between `://` and the last `@`,
/// its control characters, and anything past 300 characters.
pub fn redact_str(url: &str) -> String {
    if let Ok(parsed) = Url::parse(url) {
        return redact(&parsed);
    }
    let cut = url.find(['?', '#']).unwrap_or(url.len());
    let head = &url[..cut];
    let shown = match (head.find("://"), head.rfind('@')) {
        (Some(s), Some(at)) if at > s => format!("{}{}", &head[..s + 3], &head[at + 1..]),
        _ => head.to_owned(),
    };
    shown
        .chars()
        .filter(|c| !c.is_control())
        .take(300)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    #[test]
    fn classes() {
        let c = |s: &str| AddressClass::of(s.parse().unwrap());
        assert_eq!(c("127.0.0.1"), AddressClass::Loopback);
        assert_eq!(c("0.0.0.0"), AddressClass::Loopback);
        assert_eq!(c("::1"), AddressClass::Loopback);
        assert_eq!(c("::"), AddressClass::Loopback);
        assert_eq!(c("::ffff:127.0.0.1"), AddressClass::Loopback);
        assert_eq!(c("10.1.2.3"), AddressClass::Private);
        assert_eq!(c("172.31.0.1"), AddressClass::Private);
        assert_eq!(c("192.168.1.1"), AddressClass::Private);
        assert_eq!(c("100.64.0.1"), AddressClass::Private);
        assert_eq!(c("fd00::1"), AddressClass::Private);
        assert_eq!(c("::ffff:10.0.0.1"), AddressClass::Private);
        assert_eq!(c("64:ff9b::a9fe:a9fe"), AddressClass::LinkLocal);
        assert_eq!(c("169.254.169.254"), AddressClass::LinkLocal);
        assert_eq!(c("fe80::1"), AddressClass::LinkLocal);
        assert_eq!(c("224.0.0.1"), AddressClass::Special);
        assert_eq!(c("255.255.255.255"), AddressClass::Special);
        assert_eq!(c("8.8.8.8"), AddressClass::Public);
        assert_eq!(c("2606:4700::1111"), AddressClass::Public);
        assert_eq!(c("172.32.0.1"), AddressClass::Public);
    }

    #[test]
    fn only_https_or_loopback_http() {
        assert!(check_scheme(&url("https://as.example/authorize")).is_ok());
        assert!(check_scheme(&url("http://127.0.0.1:8080/token")).is_ok());
        assert!(check_scheme(&url("http://localhost/token")).is_ok());
        assert!(check_scheme(&url("http://[::1]:9/x")).is_ok());
        for bad in [
            "http://as.example/authorize",
            "http://10.0.0.1/token",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "ftp://as.example/",
            "data:text/html,hi",
        ] {
            assert!(
                matches!(check_scheme(&url(bad)), Err(UrlRule::Scheme { .. })),
                "{bad}"
            );
        }
    }

    #[tokio::test]
    async fn addresses_beside_the_endpoint_only() {
        let public = Reachable::PUBLIC;
        let meta = url("https://169.254.169.254/latest/meta-data");
        assert!(matches!(
            check(&meta, public).await,
            Err(UrlRule::Address {
                class: AddressClass::LinkLocal,
                ..
            })
        ));
        let local = url("http://127.0.0.1:9/x");
        assert!(check(&local, public).await.is_err());
        let beside = Reachable::beside(["127.0.0.1".parse().unwrap()]);
        assert!(check(&local, beside).await.is_ok());
        assert!(check(&meta, beside).await.is_err());
        let private = url("https://10.0.0.7/as");
        assert!(check(&private, beside).await.is_err());
        assert!(check(&private, Reachable::ANY).await.is_ok());
        // A name is checked on what it resolves to.
        assert!(check(&url("http://localhost:9/x"), public).await.is_err());
        assert!(check(&url("http://localhost:9/x"), beside).await.is_ok());
    }

    #[test]
    fn redacted_urls_hold_no_secret() {
        let shown = redact(&url("https://user:hunter2@mcp.example/p?key=abc#frag"));
        assert_eq!(shown, "https://mcp.example/p?…");
        assert!(!shown.contains("hunter2") && !shown.contains("abc"));
        assert_eq!(
            redact_str("not a url://u:pw@x?secret"),
            "not a url://u:pw@x".replace("u:pw@", "")
        );
        assert!(!redact_str("https://u:pw@x/y?code=1").contains("pw"));
    }
}
