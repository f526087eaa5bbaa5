//! Where the metadata of a protected MCP server and of its authorization server are looked
//! for, in the specification's order, and what makes a document acceptable.
//!
//! - Protected resource metadata (RFC 9728): the `resource_metadata` URL of the server's
//!   challenge when it gave one, else `/.well-known/oauth-protected-resource` with the MCP
//!   endpoint's path appended, then at the root.
//! - Authorization server metadata: for an issuer with a path, RFC 8414 with the path
//!   appended, then OpenID Connect Discovery with the path appended, then with the path
//!   prefixed (OpenID Connect Discovery 1.0 §4); for an issuer without one, RFC 8414 then
//!   OpenID Connect Discovery.
//!
//! Pure: it builds URLs and checks documents; fetching them is [`super::flow`]'s.

use reqwest::Url;
use serde::Deserialize;

/// The protected resource metadata (RFC 9728 §2) of an MCP server, as far as a client uses it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct ResourceMetadata {
    /// The resource's identifier: the MCP server's canonical URL.
    pub resource: String,
    /// The issuers of the authorization servers the resource accepts tokens of.
    #[serde(default)]
    pub authorization_servers: Vec<String>,
    /// The scopes the resource knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
}

/// An authorization server's metadata (RFC 8414 §2, OpenID Connect Discovery), as far as a
/// client uses it.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct ServerMetadata {
    /// The issuer; must equal the one the metadata URL was built from.
    pub issuer: String,
    /// Where the user is sent.
    pub authorization_endpoint: String,
    /// Where codes and refresh tokens are redeemed.
    pub token_endpoint: String,
    /// Dynamic client registration (RFC 7591), when offered.
    #[serde(default)]
    pub registration_endpoint: Option<String>,
    /// The scopes the server knows.
    #[serde(default)]
    pub scopes_supported: Option<Vec<String>>,
    /// `S256` must be among them: PKCE is required.
    #[serde(default)]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// How a client authenticates at the token endpoint (`client_secret_basic` by default).
    #[serde(default)]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// RFC 9207: the authorization response carries `iss`, which must then be checked.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// Client ID Metadata Documents: a URL may be the client id.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
    /// The grant types the server supports.
    #[serde(default)]
    pub grant_types_supported: Option<Vec<String>>,
}

impl ServerMetadata {
    /// Whether PKCE with `S256` is advertised (a server that does not is refused).
    pub fn supports_s256(&self) -> bool {
        self.code_challenge_methods_supported
            .as_ref()
            .is_some_and(|m| m.iter().any(|m| m == "S256"))
    }

    /// Whether the authorization response must carry `iss` (RFC 9207).
    pub fn requires_iss(&self) -> bool {
        self.authorization_response_iss_parameter_supported == Some(true)
    }

    /// Whether `scope` is among the advertised scopes.
    pub fn offers_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }
}

/// The URLs where the protected resource metadata of the MCP endpoint `endpoint` is looked
/// for, in order, when the challenge named none: with the endpoint's path, then at the root.
pub fn resource_metadata_urls(endpoint: &Url) -> Vec<Url> {
    const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";
    let path = endpoint.path().trim_end_matches('/');
    let mut urls = Vec::new();
    if !path.is_empty() {
        urls.push(at(endpoint, &format!("{WELL_KNOWN}{path}")));
    }
    urls.push(at(endpoint, WELL_KNOWN));
    urls
}

/// The URLs of an authorization server's metadata for `issuer`, in order.
pub fn server_metadata_urls(issuer: &Url) -> Vec<Url> {
    const OAUTH: &str = "/.well-known/oauth-authorization-server";
    const OIDC: &str = "/.well-known/openid-configuration";
    let path = issuer.path().trim_end_matches('/');
    if path.is_empty() {
        vec![at(issuer, OAUTH), at(issuer, OIDC)]
    } else {
        vec![
            at(issuer, &format!("{OAUTH}{path}")),
            at(issuer, &format!("{OIDC}{path}")),
            at(issuer, &format!("{path}{OIDC}")),
        ]
    }
}

/// `base`'s origin with `path`, no query, no fragment.
fn at(base: &Url, path: &str) -> Url {
    let mut url = base.clone();
    url.set_path(path);
    url.set_query(None);
    url.set_fragment(None);
    url
}

/// Whether the resource metadata's `resource` names the MCP server at `endpoint`: the same
/// origin, and the endpoint's path at or under the resource's path (a resource may name the
/// server's origin, or the endpoint itself).
pub fn resource_matches(resource: &str, endpoint: &Url) -> bool {
    let Ok(resource) = Url::parse(resource) else {
        return false;
    };
    if resource.origin() != endpoint.origin() {
        return false;
    }
    let base = resource.path().trim_end_matches('/');
    let path = endpoint.path().trim_end_matches('/');
    path == base || path.starts_with(&format!("{base}/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Url {
        Url::parse(s).unwrap()
    }

    fn strings(urls: Vec<Url>) -> Vec<String> {
        urls.into_iter().map(String::from).collect()
    }

    #[test]
    fn resource_metadata_with_the_path_then_at_the_root() {
        assert_eq!(
            strings(resource_metadata_urls(&url(
                "https://h.example:8443/mcp?x=1"
            ))),
            [
                "https://h.example:8443/.well-known/oauth-protected-resource/mcp",
                "https://h.example:8443/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            strings(resource_metadata_urls(&url("http://127.0.0.1:9/"))),
            ["http://127.0.0.1:9/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn server_metadata_in_the_specifications_order() {
        assert_eq!(
            strings(server_metadata_urls(&url("https://auth.example/tenant1"))),
            [
                "https://auth.example/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example/.well-known/openid-configuration/tenant1",
                "https://auth.example/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            strings(server_metadata_urls(&url("https://auth.example"))),
            [
                "https://auth.example/.well-known/oauth-authorization-server",
                "https://auth.example/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn a_resource_matches_its_endpoint_or_an_origin_above_it() {
        let endpoint = url("https://mcp.example/api/mcp");
        assert!(resource_matches("https://mcp.example/api/mcp", &endpoint));
        assert!(resource_matches("https://mcp.example/api/mcp/", &endpoint));
        assert!(resource_matches("https://mcp.example", &endpoint));
        assert!(resource_matches("https://mcp.example/api", &endpoint));
        assert!(!resource_matches("https://mcp.example/ap", &endpoint));
        assert!(!resource_matches("https://evil.example/api/mcp", &endpoint));
        assert!(!resource_matches("http://mcp.example/api/mcp", &endpoint));
        assert!(!resource_matches("not a url", &endpoint));
    }
}
