//! What a server says about authorization ([`mcp_runtime::auth`]) on arbitrary input: its
//! `WWW-Authenticate` challenge ([`Challenge::parse`]), its metadata documents
//! ([`ResourceMetadata`], [`ServerMetadata`]) and the URLs built from and checked against an
//! endpoint ([`resource_metadata_urls`], [`server_metadata_urls`], [`resource_matches`]).
//! Never a panic, and:
//!
//! - parsing is deterministic, and the challenge of several header values is the one of the
//!   first value that has a Bearer challenge;
//! - a parsed challenge written back (every value quoted and escaped) parses to itself, and
//!   its values hold only characters of the input (none is made up);
//! - scopes are non-empty and space-free; `is_insufficient_scope` is the `error` it says;
//! - the metadata URLs of an endpoint keep its scheme, lose its query and fragment, and, for
//!   an `http` or `https` one, keep its origin and sit under `/.well-known/` (the last at the
//!   root);
//! - an endpoint's own URL, and its origin, are resources that match it; a resource of
//!   another origin never does.
//!
//! The input: its first line is the endpoint (and issuer) URL; the rest, line by line, the
//! header values; the rest as a whole, a metadata document (both kinds).

use std::collections::HashSet;
use std::hint::black_box;

use mcp_runtime::auth::Url;
use mcp_runtime::auth::challenge::Challenge;
use mcp_runtime::auth::discovery::{
    ResourceMetadata, ServerMetadata, resource_matches, resource_metadata_urls,
    server_metadata_urls,
};

/// Checks one input (see the [module](self)).
pub fn check(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
    check_challenge(&text, rest.split('\n'));
    check_challenge(&text, [text.as_ref()].into_iter());
    let endpoint = Url::parse(first.trim()).ok();
    if let Some(endpoint) = &endpoint {
        check_urls(endpoint);
    }
    check_documents(rest.as_bytes(), endpoint.as_ref());
}

/// The challenge among `values` (all taken from `input`).
fn check_challenge<'a>(input: &str, values: impl Iterator<Item = &'a str> + Clone) {
    let parsed = Challenge::parse(values.clone());
    assert_eq!(
        parsed,
        Challenge::parse(values.clone()),
        "not deterministic"
    );
    let first = values.clone().find_map(|v| Challenge::parse([v]));
    assert_eq!(parsed, first, "not the first value's challenge");
    let Some(c) = parsed else {
        return;
    };
    let allowed: HashSet<char> = input.chars().collect();
    let fields = [
        &c.resource_metadata,
        &c.scope,
        &c.error,
        &c.error_description,
    ];
    for value in fields.into_iter().flatten() {
        if let Some(ch) = value.chars().find(|ch| !allowed.contains(ch)) {
            panic!("{ch:?} is in {value:?} but not in the input");
        }
    }
    for scope in c.scopes() {
        assert!(!scope.is_empty() && !scope.contains(' '), "{scope:?}");
    }
    assert_eq!(
        c.is_insufficient_scope(),
        c.error.as_deref() == Some("insufficient_scope")
    );
    // Written back, quoted: the same challenge.
    let written = write(&c);
    assert_eq!(
        Challenge::parse([written.as_str()]).as_ref(),
        Some(&c),
        "{written:?}"
    );
    // After another scheme's challenge: still the same.
    let after = format!("Basic realm=\"x\", {written}");
    assert_eq!(
        Challenge::parse([after.as_str()]).as_ref(),
        Some(&c),
        "{after:?}"
    );
}

/// `c` as a `WWW-Authenticate` value, every parameter a quoted string.
fn write(c: &Challenge) -> String {
    let quoted = |v: &str| {
        let mut out = String::from("\"");
        for ch in v.chars() {
            if ch == '"' || ch == '\\' {
                out.push('\\');
            }
            out.push(ch);
        }
        out.push('"');
        out
    };
    let mut params = Vec::new();
    for (name, value) in [
        ("resource_metadata", &c.resource_metadata),
        ("scope", &c.scope),
        ("error", &c.error),
        ("error_description", &c.error_description),
    ] {
        if let Some(v) = value {
            params.push(format!("{name}={}", quoted(v)));
        }
    }
    format!("Bearer {}", params.join(", "))
}

/// The metadata URLs of `endpoint`, as an MCP endpoint and as an issuer.
fn check_urls(endpoint: &Url) {
    let resource = resource_metadata_urls(endpoint);
    assert!((1..=2).contains(&resource.len()), "{resource:?}");
    let server = server_metadata_urls(endpoint);
    assert!((2..=3).contains(&server.len()), "{server:?}");
    for url in resource.iter().chain(&server) {
        assert_eq!(url.query(), None, "{url}");
        assert_eq!(url.fragment(), None, "{url}");
        assert_eq!(url.scheme(), endpoint.scheme(), "{url}");
    }
    // The schemes an endpoint or an issuer can have (a `blob:` URL has its inner URL's
    // origin, which a new path replaces).
    let web = matches!(endpoint.scheme(), "http" | "https");
    if web {
        for url in resource.iter().chain(&server) {
            assert_eq!(url.origin(), endpoint.origin(), "{url}");
        }
        let root = resource.last().map(Url::path);
        assert_eq!(root, Some("/.well-known/oauth-protected-resource"));
        for url in &resource {
            assert!(
                url.path()
                    .starts_with("/.well-known/oauth-protected-resource"),
                "{url}"
            );
        }
        for url in &server {
            assert!(url.path().contains("/.well-known/"), "{url}");
        }
    }
    if web {
        assert!(resource_matches(endpoint.as_str(), endpoint), "{endpoint}");
        let origin = endpoint.origin().ascii_serialization();
        assert!(resource_matches(&origin, endpoint), "{origin} / {endpoint}");
        let mut other = endpoint.clone();
        let scheme = if endpoint.scheme() == "http" {
            "https"
        } else {
            "http"
        };
        if other.set_scheme(scheme).is_ok() && other.origin() != endpoint.origin() {
            assert!(!resource_matches(other.as_str(), endpoint), "{other}");
        }
    }
}

/// `bytes` as both metadata documents, and their URLs against `endpoint`.
fn check_documents(bytes: &[u8], endpoint: Option<&Url>) {
    let resource = serde_json::from_slice::<ResourceMetadata>(bytes).ok();
    assert_eq!(
        resource,
        serde_json::from_slice::<ResourceMetadata>(bytes).ok()
    );
    let server = serde_json::from_slice::<ServerMetadata>(bytes).ok();
    if let Some(server) = &server {
        black_box((
            server.supports_s256(),
            server.requires_iss(),
            server.offers_scope("openid"),
        ));
        if let Ok(issuer) = Url::parse(&server.issuer) {
            check_urls(&issuer);
        }
    }
    let (Some(resource), Some(endpoint)) = (resource, endpoint) else {
        return;
    };
    let matches = resource_matches(&resource.resource, endpoint);
    if matches {
        let parsed = Url::parse(&resource.resource).expect("a matching resource is a URL");
        assert_eq!(parsed.origin(), endpoint.origin());
    }
    for issuer in &resource.authorization_servers {
        if let Ok(issuer) = Url::parse(issuer) {
            check_urls(&issuer);
        }
    }
}
