//! `-H 'Name: value'` / `--header`: HTTP headers for `--http` and `--sse`, checked before
//! anything connects.
//!
//! A header value is often a secret (`Authorization: Bearer …`), so it is never printed: the
//! errors name the header (when its name is a valid token) or its position on the command line,
//! never its value, and [`Header`]'s `Debug` shows `<redacted>`. The flag is taken by clap as
//! a plain string (a failing clap value parser would echo the whole argument).

use std::fmt;

use crate::error::CliError;

/// Headers the HTTP transport sets itself (the library's list).
pub use mcp_runtime::transport::RESERVED_HEADERS as RESERVED;
/// The prefix of the headers the HTTP transport sets for a tool (`Mcp-Param-*`).
use mcp_runtime::transport::RESERVED_PREFIX;

/// One checked header: its name is an HTTP token, its value has no CR, LF or other control
/// character (tab excepted) and no surrounding whitespace.
#[derive(Clone, PartialEq, Eq)]
pub struct Header {
    /// The name as given (HTTP names are case-insensitive).
    pub name: String,
    /// The value (never printed).
    pub value: String,
}

impl fmt::Debug for Header {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Header({}: <redacted>)", self.name)
    }
}

/// Whether `c` may appear in an HTTP token (RFC 9110 §5.6.2 `tchar`).
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Whether `name` is an HTTP token (a valid header name).
pub fn is_token(name: &str) -> bool {
    !name.is_empty() && name.chars().all(is_tchar)
}

/// Parses the `index`-th (from 1) `-H` argument, `Name: value`. Errors are usage errors (exit
/// 2) that never contain the value.
pub fn parse(index: usize, raw: &str) -> Result<Header, CliError> {
    let what = format!("-H/--header #{index}");
    let Some((name, value)) = raw.split_once(':') else {
        return Err(CliError::usage(
            what,
            "expected 'Name: value' (no colon found; the argument is not shown, it may be a secret)",
        ));
    };
    let name = name.trim_matches([' ', '\t']);
    if !is_token(name) {
        return Err(CliError::usage(
            what,
            "the header name is not an HTTP token (letters, digits and !#$%&'*+-.^_`|~, \
             nothing else; the argument is not shown, it may be a secret)",
        ));
    }
    let what = format!("-H/--header {name}");
    if RESERVED.iter().any(|r| r.eq_ignore_ascii_case(name))
        || name.to_ascii_lowercase().starts_with(RESERVED_PREFIX)
    {
        return Err(CliError::usage(
            what,
            "the HTTP transport sets this header itself",
        ));
    }
    let value = value.trim_matches([' ', '\t']);
    if value.contains(['\r', '\n']) {
        return Err(CliError::usage(
            what,
            "the value contains a CR or LF (header injection); the value is not shown",
        ));
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(CliError::usage(
            what,
            "the value contains a control character; the value is not shown",
        ));
    }
    Ok(Header {
        name: name.to_owned(),
        value: value.to_owned(),
    })
}

/// Parses every `-H` argument, in order.
pub fn parse_all(raw: &[String]) -> Result<Vec<Header>, CliError> {
    raw.iter()
        .enumerate()
        .map(|(i, h)| parse(i + 1, h))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "s3cr3t-t0ken";

    #[test]
    fn a_header_parses_and_trims() {
        let h = parse(1, "Authorization:  Bearer x:y ").unwrap();
        assert_eq!(h.name, "Authorization");
        assert_eq!(h.value, "Bearer x:y");
        assert_eq!(parse(1, "X-Empty:").unwrap().value, "");
        assert_eq!(
            format!("{h:?}"),
            "Header(Authorization: <redacted>)",
            "Debug never shows the value"
        );
    }

    #[test]
    fn bad_headers_are_usage_errors_without_the_value() {
        for raw in [
            format!("X-Key: {SECRET}\r\nX-Injected: 1"),
            format!("X-Key: {SECRET}\nmore"),
            format!("X-Key: {SECRET}\r"),
            format!("X-Key: {SECRET}\u{0}"),
            format!("Bad Name: {SECRET}"),
            format!("Bad\u{e9}: {SECRET}"),
            format!(": {SECRET}"),
            format!("Bearer {SECRET}"),
            format!("mcp-session-id: {SECRET}"),
            format!("Mcp-Method: {SECRET}"),
            format!("Mcp-Param-Region: {SECRET}"),
        ] {
            let e = parse(3, &raw).unwrap_err();
            assert_eq!(e.exit, crate::error::Exit::Usage, "{raw:?}");
            let line = e.to_string();
            assert!(!line.contains(SECRET), "{line}");
            assert!(line.contains("-H/--header"), "{line}");
        }
        let e = parse(1, &format!("X-Key: a\r\nb{SECRET}")).unwrap_err();
        assert!(e.to_string().contains("CR or LF"), "{e}");
        assert!(e.to_string().contains("X-Key"), "the name is shown: {e}");
    }

    #[test]
    fn tokens() {
        assert!(is_token("X-Api-Key"));
        assert!(is_token("a!#$%&'*+-.^_`|~9"));
        assert!(!is_token(""));
        assert!(!is_token("a b"));
        assert!(!is_token("a:b"));
        assert!(!is_token("a(b)"));
    }
}
