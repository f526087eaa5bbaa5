//! The `auth:KIND` fault ([`AuthKind`]): the MCP endpoint answers `401` with a Bearer
//! challenge to every request without a token this server issued, and the authorization
//! documents (OAuth 2.0 protected resource metadata, RFC 9728; authorization server metadata,
//! RFC 8414; dynamic registration, RFC 7591; the authorization and token endpoints) mislead
//! as the kind says. Both origins serve them: the main one (the MCP endpoint's) and the other
//! one, whose documents name itself as the issuer, so that a client that follows the hostile
//! server there carries on and is seen doing it.
//!
//! Every secret handed out (authorization codes, access and refresh tokens) starts with
//! [`SECRET_PREFIX`], so that a test can look for it in a client's output and in what reached
//! the other origin. This is a test fixture: no signature, no expiry, no real PKCE check.

use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use hyper::header::{HeaderMap, HeaderValue, LOCATION, WWW_AUTHENTICATE};
use hyper::{Method, Response, StatusCode};
use serde_json::{Value, json};

use super::fault::AuthKind;
use super::record::Origin;
use super::session::lock;
use super::{Body, State, frames_body, json_response, text};

/// What every secret this server hands out starts with.
pub const SECRET_PREFIX: &str = "hostile-secret-";

/// Where `auth:private-metadata` points when the other origin is not in another class than
/// the endpoint: the cloud instance metadata address (link-local).
pub const LINK_LOCAL_METADATA: &str =
    "http://169.254.169.254/latest/meta-data/iam/security-credentials/mcp";

/// The issuer `auth:http-issuer` names when the other origin is on loopback (a name that never
/// resolves, RFC 6761).
pub const INVALID_ISSUER: &str = "http://hostile-issuer.invalid";

/// The size of `auth:huge-metadata`'s document (about).
pub const HUGE_METADATA_BYTES: usize = 64 << 20;

/// What `auth:file-endpoint` names as the authorization endpoint.
pub const FILE_ENDPOINT: &str = "file:///etc/passwd";

const PRM: &str = "/.well-known/oauth-protected-resource";
const ASM: &str = "/.well-known/oauth-authorization-server";

/// The access tokens this server issued (a request carrying one is served).
#[derive(Debug, Default)]
pub(super) struct Issued {
    tokens: Mutex<Vec<String>>,
    next: AtomicU64,
}

impl Issued {
    /// A new secret: [`SECRET_PREFIX`], what it is, a random part.
    fn secret(&self, what: &str) -> String {
        let n = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        format!(
            "{SECRET_PREFIX}{what}-{:016x}",
            super::fastish_random(n ^ 0x5eed)
        )
    }
}

/// The class of an address, as far as "another place" goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Loopback,
    Private,
    LinkLocal,
    Public,
}

fn class(ip: IpAddr) -> Class {
    match ip {
        IpAddr::V4(a) if a.is_loopback() => Class::Loopback,
        IpAddr::V4(a) if a.is_private() => Class::Private,
        IpAddr::V4(a) if a.is_link_local() => Class::LinkLocal,
        IpAddr::V6(a) if a.is_loopback() => Class::Loopback,
        IpAddr::V6(a) if a.segments()[0] & 0xfe00 == 0xfc00 => Class::Private,
        IpAddr::V6(a) if a.segments()[0] & 0xffc0 == 0xfe80 => Class::LinkLocal,
        IpAddr::V4(_) | IpAddr::V6(_) => Class::Public,
    }
}

fn base(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

impl State {
    fn main_base(&self) -> String {
        base(self.addr)
    }

    fn other_base(&self) -> Option<String> {
        self.other.map(base)
    }

    /// `auth:private-metadata`'s metadata URL: the other origin when it is internal and in
    /// another class than the endpoint, else [`LINK_LOCAL_METADATA`].
    fn private_metadata_url(&self) -> String {
        match self.other {
            Some(o) if class(o.ip()) != Class::Public && class(o.ip()) != class(self.addr.ip()) => {
                format!("{}{PRM}/mcp", base(o))
            }
            _ => LINK_LOCAL_METADATA.to_owned(),
        }
    }

    /// `auth:http-issuer`'s issuer: the other origin when it is not on loopback, else
    /// [`INVALID_ISSUER`].
    fn http_issuer(&self) -> String {
        match self.other {
            Some(o) if !o.ip().is_loopback() => base(o),
            _ => INVALID_ISSUER.to_owned(),
        }
    }
}

/// Whether `headers` carry an access token this server issued.
pub(super) fn authorized(state: &State, headers: &HeaderMap) -> bool {
    let Some(token) = headers
        .get(hyper::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
    else {
        return false;
    };
    lock(&state.issued.tokens).iter().any(|t| t == token)
}

/// The `401` of the MCP endpoint: a Bearer challenge naming the kind's metadata.
pub(super) fn challenge(state: &State, kind: AuthKind) -> Response<Body> {
    let metadata = match kind {
        AuthKind::PrivateMetadata => Some(state.private_metadata_url()),
        AuthKind::PasswordUrl => None,
        _ => Some(format!("{}{PRM}/mcp", state.main_base())),
    };
    let mut value = "Bearer realm=\"mcp\", scope=\"mcp\"".to_owned();
    if let Some(m) = metadata {
        value.push_str(&format!(", resource_metadata=\"{m}\""));
    }
    let mut r = json_response(
        StatusCode::UNAUTHORIZED,
        json!({"error": "unauthorized", "error_description": "a Bearer token is required"})
            .to_string()
            .into_bytes(),
    );
    if let Ok(v) = HeaderValue::from_str(&value) {
        r.headers_mut().insert(WWW_AUTHENTICATE, v);
    }
    r
}

/// The answer of `origin` to a request for an authorization document or endpoint; `None`
/// when `path` is not one.
pub(super) async fn document(
    state: &State,
    kind: AuthKind,
    origin: Origin,
    method: &Method,
    path: &str,
    query: &str,
) -> Option<Response<Body>> {
    let own = match origin {
        Origin::Main => state.main_base(),
        Origin::Other => state.other_base()?,
    };
    let main = origin == Origin::Main;
    Some(match (method, path) {
        (&Method::GET, p) if p == PRM || p == format!("{PRM}/mcp") => {
            if main {
                return Some(main_resource_metadata(state, kind, path).await);
            }
            resource_metadata(state, &own)
        }
        (&Method::GET, ASM) => {
            let authorize = if main && kind == AuthKind::FileEndpoint {
                FILE_ENDPOINT.to_owned()
            } else {
                format!("{own}/authorize")
            };
            ok_json(json!({
                "issuer": own,
                "authorization_endpoint": authorize,
                "token_endpoint": format!("{own}/token"),
                "registration_endpoint": format!("{own}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
                "scopes_supported": ["mcp"],
            }))
        }
        (&Method::POST, "/register") => json_response(
            StatusCode::CREATED,
            json!({"client_id": "hostile-client", "token_endpoint_auth_method": "none",
                "redirect_uris": []})
            .to_string()
            .into_bytes(),
        ),
        (&Method::GET, "/authorize") => authorize(state, &own, query),
        (&Method::POST, "/token") => {
            let access = state.issued.secret("access");
            lock(&state.issued.tokens).push(access.clone());
            let expires_in = if kind == AuthKind::ExpiresMax {
                u64::MAX
            } else {
                3600
            };
            ok_json(json!({
                "access_token": access,
                "token_type": "Bearer",
                "expires_in": expires_in,
                "refresh_token": state.issued.secret("refresh"),
                "scope": "mcp",
            }))
        }
        _ => return None,
    })
}

/// A well-formed resource metadata document for the endpoint, naming `issuer`.
fn resource_metadata_naming(state: &State, issuer: &str) -> Value {
    json!({
        "resource": format!("{}/mcp", state.main_base()),
        "authorization_servers": [issuer],
        "scopes_supported": ["mcp"],
        "bearer_methods_supported": ["header"],
    })
}

/// The other origin's resource metadata: itself as the issuer.
fn resource_metadata(state: &State, own: &str) -> Response<Body> {
    ok_json(resource_metadata_naming(state, own))
}

/// The main origin's resource metadata, as the kind misleads.
async fn main_resource_metadata(state: &State, kind: AuthKind, path: &str) -> Response<Body> {
    match kind {
        AuthKind::HugeMetadata => huge_metadata(state),
        AuthKind::SlowMetadata => std::future::pending().await,
        AuthKind::RedirectMetadata => {
            let to = match state.other_base() {
                Some(other) => format!("{other}{path}"),
                None => format!("http://localhost:{}{path}", state.addr.port()),
            };
            let mut r = text(StatusCode::FOUND, "moved");
            if let Ok(v) = HeaderValue::from_str(&to) {
                r.headers_mut().insert(LOCATION, v);
            }
            r
        }
        AuthKind::PasswordUrl => text(StatusCode::NOT_FOUND, "no metadata here"),
        AuthKind::HttpIssuer => ok_json(resource_metadata_naming(state, &state.http_issuer())),
        AuthKind::FileEndpoint
        | AuthKind::PrivateMetadata
        | AuthKind::ExpiresMax
        | AuthKind::Grant => ok_json(resource_metadata_naming(state, &state.main_base())),
    }
}

/// [`HUGE_METADATA_BYTES`] of JSON, streamed in 64 KiB frames without `Content-Length`.
fn huge_metadata(state: &State) -> Response<Body> {
    const FRAME: usize = 64 << 10;
    let head = format!(
        "{{\"resource\":\"{}/mcp\",\"authorization_servers\":[\"{}\"],\"padding\":\"",
        state.main_base(),
        state.main_base()
    );
    let pad = Bytes::from(vec![b'x'; FRAME]);
    let mut frames = vec![Bytes::from(head)];
    frames.extend(std::iter::repeat_n(pad, HUGE_METADATA_BYTES / FRAME));
    frames.push(Bytes::from_static(b"\"}"));
    let mut r = Response::new(frames_body(frames));
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// The authorization endpoint: redirects at once to the client's `redirect_uri` with a code,
/// its `state` and the `iss` (RFC 9207).
fn authorize(state: &State, issuer: &str, query: &str) -> Response<Body> {
    let param = |name: &str| {
        query.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (percent_decode(k) == name).then(|| percent_decode(v))
        })
    };
    let Some(redirect) = param("redirect_uri") else {
        return text(StatusCode::BAD_REQUEST, "no redirect_uri");
    };
    let code = state.issued.secret("code");
    let sep = if redirect.contains('?') { '&' } else { '?' };
    let mut to = format!("{redirect}{sep}code={}", percent_encode(&code));
    if let Some(s) = param("state") {
        to.push_str(&format!("&state={}", percent_encode(&s)));
    }
    to.push_str(&format!("&iss={}", percent_encode(issuer)));
    let mut r = text(StatusCode::FOUND, "redirecting");
    if let Ok(v) = HeaderValue::from_str(&to) {
        r.headers_mut().insert(LOCATION, v);
    }
    r
}

fn ok_json(v: Value) -> Response<Body> {
    json_response(StatusCode::OK, v.to_string().into_bytes())
}

/// `application/x-www-form-urlencoded` decoding (`+` is a space; a bad escape stays as is).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                        continue;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Percent-encodes everything but the unreserved characters (RFC 3986).
fn percent_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_coding_round_trips() {
        for s in ["http://127.0.0.1:5/cb?x=1", "a b+c", "é~", ""] {
            assert_eq!(percent_decode(&percent_encode(s)), s);
        }
        assert_eq!(percent_decode("a+b%2Fc%zz%4"), "a b/c%zz%4");
    }

    #[test]
    fn classes() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert_eq!(class(ip("127.0.0.1")), Class::Loopback);
        assert_eq!(class(ip("::1")), Class::Loopback);
        assert_eq!(class(ip("10.1.2.3")), Class::Private);
        assert_eq!(class(ip("192.168.0.1")), Class::Private);
        assert_eq!(class(ip("fd00::2")), Class::Private);
        assert_eq!(class(ip("169.254.169.254")), Class::LinkLocal);
        assert_eq!(class(ip("fe80::1")), Class::LinkLocal);
        assert_eq!(class(ip("192.0.2.2")), Class::Public);
        assert_eq!(class(ip("8.8.8.8")), Class::Public);
    }
}
