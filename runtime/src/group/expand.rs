//! Variable expansion in the strings of a server configuration: `${VAR}`, `${VAR:-default}`
//! and `${env:VAR}` (as VS Code and Cursor write it), replaced by the value an environment
//! lookup gives. Not a shell: bare `$VAR` is left as written, nothing is expanded twice, and
//! there is no escape.
//!
//! The rules (the same as Claude Code's for its `.mcp.json`):
//!
//! - `${NAME}` and `${env:NAME}`, `NAME` being `[A-Za-z_][A-Za-z0-9_]*`: the variable's value;
//!   a variable that is set but empty gives the empty string.
//! - `${NAME:-default}` (and `${env:NAME:-default}`): the default when the variable is not set.
//!   The default is taken as written (no expansion inside it) and ends at the first `}`.
//! - A variable that is not set, without a default, stays as written (`${NAME}`) and is
//!   reported as [`Unexpanded::Unset`].
//! - `${input:ID}` (VS Code prompts the user for it) stays as written and is reported as
//!   [`Unexpanded::Input`]: there is no one to ask here.
//! - Anything else between `${` and `}` (a name with other characters, `${}`), and a `${`
//!   without its `}`, stays as written, unreported.
//! - No escape: `$${NAME}` is a `$` followed by the expansion of `${NAME}`. A value is never
//!   scanned again, so a value that contains `${…}` is taken as it is.

/// A reference that was left as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Unexpanded {
    /// `${NAME}` of a variable that is not set (and has no default).
    Unset(String),
    /// `${input:ID}`: a VS Code input, which only VS Code can ask for.
    Input(String),
}

/// `text` with its references replaced by what `env` gives; each reference left as written is
/// pushed on `left`. `env` is asked only about well-formed names.
pub(crate) fn expand(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
    left: &mut Vec<Unexpanded>,
) -> String {
    if !text.contains("${") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            // No closing brace: the rest is literal.
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let written = &rest[start..start + 2 + end + 1];
        match replacement(inner, env) {
            Reference::Value(value) => out.push_str(&value),
            Reference::Left(why) => {
                out.push_str(written);
                left.push(why);
            }
            Reference::NotOne => out.push_str(written),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// What one `${inner}` stands for.
enum Reference {
    /// Its value (the variable's, or the default).
    Value(String),
    /// Left as written, and why.
    Left(Unexpanded),
    /// Not a reference at all: left as written, unreported.
    NotOne,
}

fn replacement(inner: &str, env: &dyn Fn(&str) -> Option<String>) -> Reference {
    if let Some(id) = inner.strip_prefix("input:") {
        return Reference::Left(Unexpanded::Input(id.to_owned()));
    }
    let reference = inner.strip_prefix("env:").unwrap_or(inner);
    let (name, default) = match reference.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (reference, None),
    };
    if !is_name(name) {
        return Reference::NotOne;
    }
    match (env(name), default) {
        (Some(value), _) => Reference::Value(value),
        (None, Some(default)) => Reference::Value(default.to_owned()),
        (None, None) => Reference::Left(Unexpanded::Unset(name.to_owned())),
    }
}

/// Whether `name` is a variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/me".into()),
            "TOKEN" => Some("t0k".into()),
            "EMPTY" => Some(String::new()),
            "NESTED" => Some("${TOKEN}".into()),
            _ => None,
        }
    }

    fn run(text: &str) -> (String, Vec<Unexpanded>) {
        let mut left = Vec::new();
        let out = expand(text, &env, &mut left);
        (out, left)
    }

    #[test]
    fn set_variables_are_replaced_in_place() {
        assert_eq!(run("${HOME}/x").0, "/home/me/x");
        assert_eq!(run("Bearer ${TOKEN}").0, "Bearer t0k");
        assert_eq!(run("${HOME}:${TOKEN}").0, "/home/me:t0k");
        assert_eq!(run("${env:TOKEN}").0, "t0k");
        assert_eq!(run("no references").0, "no references");
    }

    #[test]
    fn a_default_is_used_only_when_the_variable_is_unset() {
        assert_eq!(run("${MISSING:-fallback}"), ("fallback".into(), vec![]));
        assert_eq!(run("${TOKEN:-fallback}").0, "t0k");
        // Set but empty: the empty value (Claude Code's rule, not the shell's `:-`).
        assert_eq!(run("[${EMPTY:-fallback}]").0, "[]");
        assert_eq!(run("${env:MISSING:-d}").0, "d");
        assert_eq!(run("${MISSING:-}").0, "");
        // The default is literal: not expanded, and ends at the first `}`.
        assert_eq!(run("${MISSING:-${HOME}}").0, "${HOME}");
    }

    #[test]
    fn an_unset_variable_stays_as_written_and_is_reported() {
        let (out, left) = run("--key=${MISSING} ${TOKEN}");
        assert_eq!(out, "--key=${MISSING} t0k");
        assert_eq!(left, vec![Unexpanded::Unset("MISSING".into())]);
        let (out, left) = run("${env:ALSO_MISSING}");
        assert_eq!(out, "${env:ALSO_MISSING}");
        assert_eq!(left, vec![Unexpanded::Unset("ALSO_MISSING".into())]);
    }

    #[test]
    fn bare_dollar_and_malformed_references_are_left_alone() {
        assert_eq!(run("$TOKEN and $HOME"), ("$TOKEN and $HOME".into(), vec![]));
        assert_eq!(run("${}").0, "${}");
        assert_eq!(run("${1ABC}").0, "${1ABC}");
        assert_eq!(run("${A-B}").0, "${A-B}");
        assert_eq!(run("${TOKEN").0, "${TOKEN");
        assert_eq!(run("x ${TOKEN} ${HOME").0, "x t0k ${HOME");
        assert!(run("${A B}").1.is_empty());
    }

    #[test]
    fn there_is_no_escape_and_no_second_pass() {
        assert_eq!(run("$${TOKEN}").0, "$t0k");
        // A value holding a reference is taken as it is.
        assert_eq!(run("${NESTED}").0, "${TOKEN}");
    }

    #[test]
    fn vs_code_inputs_are_left_and_reported() {
        let (out, left) = run("Bearer ${input:api-key}");
        assert_eq!(out, "Bearer ${input:api-key}");
        assert_eq!(left, vec![Unexpanded::Input("api-key".into())]);
    }

    #[test]
    fn multibyte_text_around_references_is_kept() {
        assert_eq!(run("é${TOKEN}ü${").0, "ét0kü${");
    }
}
