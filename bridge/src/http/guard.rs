//! Who may talk to the HTTP front: the `Host` header (against DNS rebinding), the `Origin`
//! header (a browser page of another site), and the bearer token (required when the front
//! listens on anything but loopback). Pure functions of the request's headers.

use std::net::SocketAddr;

/// Why a request is turned away.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// `Host` names no address of this front: `403`.
    Host,
    /// `Origin` is a site not allowed: `403`.
    Origin,
    /// No bearer token, or another one: `401`.
    Token,
}

/// What the front accepts.
#[derive(Clone, Debug)]
pub(crate) struct Guard {
    /// The address the front listens on.
    pub(crate) addr: SocketAddr,
    /// The bearer token required, if any.
    pub(crate) token: Option<String>,
    /// Origins allowed besides the loopback ones (`scheme://host[:port]`, compared exactly).
    pub(crate) origins: Vec<String>,
    /// Hosts allowed besides the listen address and the loopback names (`host[:port]`).
    pub(crate) hosts: Vec<String>,
}

impl Guard {
    /// Checks one request's `Host`, `Origin` and `Authorization` headers.
    pub(crate) fn check(
        &self,
        host: Option<&str>,
        origin: Option<&str>,
        authorization: Option<&str>,
    ) -> Result<(), Refusal> {
        if !host.is_some_and(|h| self.host_allowed(h)) {
            return Err(Refusal::Host);
        }
        if let Some(origin) = origin
            && !self.origin_allowed(origin)
        {
            return Err(Refusal::Origin);
        }
        if let Some(token) = &self.token {
            let given = authorization
                .and_then(|a| {
                    a.strip_prefix("Bearer ")
                        .or_else(|| a.strip_prefix("bearer "))
                })
                .map(str::trim);
            if !given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
                return Err(Refusal::Token);
            }
        }
        Ok(())
    }

    fn host_allowed(&self, host: &str) -> bool {
        let host = host.trim().to_ascii_lowercase();
        let port = self.addr.port();
        if self.hosts.iter().any(|h| h.eq_ignore_ascii_case(&host)) {
            return true;
        }
        let (name, given_port) = split_host(&host);
        if given_port.is_some_and(|p| p != port) {
            return false;
        }
        let ip = self.addr.ip();
        if ip.is_unspecified() {
            // Listening on every address: the token guards it; any host name will do.
            return self.token.is_some();
        }
        is_loopback_name(name) && ip.is_loopback()
            || name.trim_matches(['[', ']']) == ip.to_string()
    }

    fn origin_allowed(&self, origin: &str) -> bool {
        if self.origins.iter().any(|o| o.eq_ignore_ascii_case(origin)) {
            return true;
        }
        // A page served from this machine (`http://localhost:3000`) may talk to a loopback
        // front; nothing else may unless allowed by name.
        let Some(rest) = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
        else {
            return false;
        };
        let (name, _) = split_host(rest);
        self.addr.ip().is_loopback() && is_loopback_name(name)
    }
}

/// `host[:port]` and `[v6]:port` split into the name and the port.
fn split_host(host: &str) -> (&str, Option<u16>) {
    if let Some(end) = host.find(']') {
        let name = &host[..=end];
        let port = host[end + 1..]
            .strip_prefix(':')
            .and_then(|p| p.parse().ok());
        return (name, port);
    }
    match host.rsplit_once(':') {
        Some((name, port)) => (name, port.parse().ok()),
        None => (host, None),
    }
}

fn is_loopback_name(name: &str) -> bool {
    let name = name.trim_matches(['[', ']']).to_ascii_lowercase();
    name == "localhost"
        || name.ends_with(".localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Compares two secrets in time that depends only on their lengths.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard(addr: &str, token: Option<&str>) -> Guard {
        Guard {
            addr: addr.parse().unwrap(),
            token: token.map(str::to_owned),
            origins: vec!["https://app.example".into()],
            hosts: vec![],
        }
    }

    #[test]
    fn a_loopback_front_takes_loopback_hosts_and_origins_only() {
        let g = guard("127.0.0.1:8080", None);
        assert_eq!(g.check(Some("127.0.0.1:8080"), None, None), Ok(()));
        assert_eq!(
            g.check(Some("localhost:8080"), Some("http://localhost:3000"), None),
            Ok(())
        );
        assert_eq!(g.check(Some("[::1]:8080"), None, None), Ok(()));
        // DNS rebinding: a name that resolves here now, but names another site.
        assert_eq!(
            g.check(Some("evil.example:8080"), None, None),
            Err(Refusal::Host)
        );
        assert_eq!(
            g.check(Some("localhost:9999"), None, None),
            Err(Refusal::Host)
        );
        assert_eq!(g.check(None, None, None), Err(Refusal::Host));
        assert_eq!(
            g.check(Some("localhost:8080"), Some("https://evil.example"), None),
            Err(Refusal::Origin)
        );
        assert_eq!(
            g.check(Some("localhost:8080"), Some("https://app.example"), None),
            Ok(())
        );
        assert_eq!(
            g.check(Some("localhost:8080"), Some("null"), None),
            Err(Refusal::Origin)
        );
    }

    #[test]
    fn a_token_is_checked_exactly() {
        let g = guard("127.0.0.1:8080", Some("s3cret"));
        assert_eq!(
            g.check(Some("localhost:8080"), None, None),
            Err(Refusal::Token)
        );
        assert_eq!(
            g.check(Some("localhost:8080"), None, Some("Bearer s3cre")),
            Err(Refusal::Token)
        );
        assert_eq!(
            g.check(Some("localhost:8080"), None, Some("Basic s3cret")),
            Err(Refusal::Token)
        );
        assert_eq!(
            g.check(Some("localhost:8080"), None, Some("Bearer s3cret")),
            Ok(())
        );
    }

    #[test]
    fn every_address_needs_the_token() {
        let g = guard("0.0.0.0:8080", Some("t"));
        assert_eq!(
            g.check(Some("bridge.lan:8080"), None, Some("Bearer t")),
            Ok(())
        );
        assert_eq!(
            g.check(Some("bridge.lan:8080"), None, None),
            Err(Refusal::Token)
        );
        let open = guard("0.0.0.0:8080", None);
        assert_eq!(
            open.check(Some("bridge.lan:8080"), None, None),
            Err(Refusal::Host)
        );
    }
}
