//! The `Bearer` challenge of a `WWW-Authenticate` header (RFC 6750 §3, RFC 9728 §5.1): what a
//! 401 or a 403 says about where the resource's metadata is, which scopes it wants, and why
//! the request was refused.
//!
//! Only the `Bearer` scheme is read; a header holding several challenges (`Basic realm="x",
//! Bearer scope="a"`) yields the Bearer one. Parameters are `name=token` or
//! `name="quoted string"` (with `\` escapes); unknown ones are ignored; a malformed header
//! yields what could be read before the damage, never an error (the challenge is advice).

/// What a server's `Bearer` challenge says. Not a token and not a decision: the connection's
/// table decides what a 401 or a 403 does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: the URL of the protected resource metadata (RFC 9728).
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the resource wants, space-separated as sent.
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, `invalid_request`, …
    pub error: Option<String>,
    /// `error_description`, for messages (never a secret of ours).
    pub error_description: Option<String>,
}

impl Challenge {
    /// The `Bearer` challenge among the `WWW-Authenticate` header values `values`; `None` when
    /// none of them is a Bearer challenge.
    pub fn parse<'a>(values: impl IntoIterator<Item = &'a str>) -> Option<Challenge> {
        values.into_iter().find_map(parse_one)
    }

    /// Whether the challenge says the token lacks scope (a 403 asking for a step-up).
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    /// The scopes asked for, one per item.
    pub fn scopes(&self) -> Vec<String> {
        split_scopes(self.scope.as_deref())
    }
}

/// Scopes as a space-separated list (RFC 6749 §3.3), one per item, without empty ones.
pub(crate) fn split_scopes(scope: Option<&str>) -> Vec<String> {
    scope
        .unwrap_or_default()
        .split(' ')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The Bearer challenge of one header value.
fn parse_one(value: &str) -> Option<Challenge> {
    let mut rest = value;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return None;
        }
        let scheme_end = rest.find([' ', '\t', ',']).unwrap_or(rest.len());
        let (scheme, after) = rest.split_at(scheme_end);
        if scheme.contains('=') {
            // A parameter of a challenge that is not ours: skip it.
            rest = skip_param(rest);
            continue;
        }
        if scheme.eq_ignore_ascii_case("bearer") {
            return Some(params(after));
        }
        rest = after;
    }
}

/// The parameters after `Bearer`, up to the next challenge.
fn params(mut rest: &str) -> Challenge {
    let mut c = Challenge::default();
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        let Some(eq) = rest.find('=') else {
            return c;
        };
        let name = rest[..eq].trim();
        if name.is_empty() || name.contains([' ', '\t']) {
            // The next challenge's scheme (`Basic realm=…`): ours ended.
            return c;
        }
        let (value, after) = value(&rest[eq + 1..]);
        match name.to_ascii_lowercase().as_str() {
            "resource_metadata" => c.resource_metadata = Some(value),
            "scope" => c.scope = Some(value),
            "error" => c.error = Some(value),
            "error_description" => c.error_description = Some(value),
            _ => {}
        }
        rest = after;
    }
}

/// A parameter's value (a token or a quoted string) and what follows it.
fn value(rest: &str) -> (String, &str) {
    let rest = rest.trim_start_matches([' ', '\t']);
    if let Some(quoted) = rest.strip_prefix('"') {
        let mut out = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, ch)) = chars.next() {
            match ch {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        out.push(escaped);
                    }
                }
                '"' => return (out, &quoted[i + 1..]),
                _ => out.push(ch),
            }
        }
        // Unterminated: what there was.
        return (out, "");
    }
    let end = rest.find([',', ' ', '\t']).unwrap_or(rest.len());
    (rest[..end].to_owned(), &rest[end..])
}

/// `rest` after one `name=value` parameter.
fn skip_param(rest: &str) -> &str {
    let eq = rest.find('=').map_or(rest.len(), |i| i + 1);
    value(&rest[eq..]).1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(v: &str) -> Option<Challenge> {
        Challenge::parse([v])
    }

    #[test]
    fn a_bearer_challenge_gives_its_parameters() {
        let c = one(r#"Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource", scope="files:read files:write""#).unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.scopes(), ["files:read", "files:write"]);
        assert!(!c.is_insufficient_scope());
    }

    #[test]
    fn tokens_escapes_and_case_are_read() {
        let c = one(
            r#"bearer error=insufficient_scope,scope="a \"b\"", error_description="need more""#,
        )
        .unwrap();
        assert!(c.is_insufficient_scope());
        assert_eq!(c.scope.as_deref(), Some(r#"a "b""#));
        assert_eq!(c.error_description.as_deref(), Some("need more"));
    }

    #[test]
    fn the_bearer_one_among_several_challenges() {
        let c = one(r#"Basic realm="x", charset="UTF-8", Bearer scope="s1" , DPoP algs="ES256""#)
            .unwrap();
        assert_eq!(c.scope.as_deref(), Some("s1"));
        assert!(c.resource_metadata.is_none());
        let c = Challenge::parse(["Basic realm=\"x\"", "Bearer error=\"invalid_token\""]).unwrap();
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
    }

    #[test]
    fn no_bearer_or_damage_is_not_an_error() {
        assert_eq!(one(r#"Basic realm="x""#), None);
        assert_eq!(one(""), None);
        assert_eq!(one("Bearer"), Some(Challenge::default()));
        let c = one(r#"Bearer scope="unterminated"#).unwrap();
        assert_eq!(c.scope.as_deref(), Some("unterminated"));
        assert_eq!(one("Bearer ==,=\"").map(|c| c.scope), Some(None));
    }
}
