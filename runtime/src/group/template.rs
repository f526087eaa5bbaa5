//! Whether a URI matches an RFC 6570 URI template, as far as routing a `resources/read` needs:
//! the template's literal text must appear in order, and each expression covers the text
//! between: `{var}`, `{.var}` and `{;var}` text without `/`, `?` or `#`; `{+var}`, `{#var}`,
//! `{/var}`, `{?var}` and `{&var}` any text. Values are not decoded nor checked against the
//! variables' names; a template with an unclosed `{` matches only itself.
//!
//! Linear in the URI per template part (no backtracking), and bounded: a template or URI
//! past [`MAX_LEN`] bytes matches nothing, so a server's template cannot make routing slow.

/// The longest template and URI matched (bytes).
pub(crate) const MAX_LEN: usize = 8192;

/// One part of a template.
enum Part<'a> {
    Literal(&'a [u8]),
    /// An expression; whether it may cover `/`, `?` and `#`.
    Expr {
        any: bool,
    },
}

fn parts(template: &str) -> Option<Vec<Part<'_>>> {
    let mut out = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        match rest.find('{') {
            None => {
                out.push(Part::Literal(rest.as_bytes()));
                break;
            }
            Some(open) => {
                if open > 0 {
                    out.push(Part::Literal(&rest.as_bytes()[..open]));
                }
                let close = rest[open..].find('}')? + open;
                let op = rest[open + 1..close].chars().next();
                let any = matches!(op, Some('+' | '#' | '/' | '?' | '&'));
                out.push(Part::Expr { any });
                rest = &rest[close + 1..];
            }
        }
    }
    Some(out)
}

/// Whether `uri` matches `template` (see the module documentation).
pub(crate) fn matches(template: &str, uri: &str) -> bool {
    if template.len() > MAX_LEN || uri.len() > MAX_LEN {
        return false;
    }
    let Some(parts) = parts(template) else {
        return template == uri;
    };
    let uri = uri.as_bytes();
    // reachable[p]: the parts so far can cover exactly uri[..p].
    let mut reachable = vec![false; uri.len() + 1];
    reachable[0] = true;
    for part in &parts {
        let mut next = vec![false; uri.len() + 1];
        match part {
            Part::Literal(lit) => {
                for p in 0..=uri.len() {
                    if reachable[p] && uri[p..].starts_with(lit) {
                        next[p + lit.len()] = true;
                    }
                }
            }
            Part::Expr { any } => {
                // An expression extends any reachable position as far as its text allows.
                let mut open = false;
                for p in 0..=uri.len() {
                    open |= reachable[p];
                    next[p] = open;
                    if p < uri.len() && !any && matches!(uri[p], b'/' | b'?' | b'#') {
                        open = false;
                    }
                }
            }
        }
        reachable = next;
    }
    reachable[uri.len()]
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn simple_expressions_cover_one_segment() {
        assert!(matches("test://dynamic/{id}", "test://dynamic/42"));
        assert!(matches("test://dynamic/{id}", "test://dynamic/"));
        assert!(!matches("test://dynamic/{id}", "test://dynamic/4/2"));
        assert!(!matches("test://dynamic/{id}", "test://static/1"));
        assert!(matches(
            "db://{schema}/{table}.json",
            "db://main/users.json"
        ));
        assert!(!matches(
            "db://{schema}/{table}.json",
            "db://main/users.csv"
        ));
    }

    #[test]
    fn reserved_and_path_expressions_cover_slashes() {
        assert!(matches("file:///{+path}", "file:///home/me/notes.md"));
        assert!(matches("repo://x{/segments}", "repo://x/a/b/c"));
        assert!(matches(
            "search://q{?query,limit}",
            "search://q?query=a&limit=3"
        ));
        assert!(!matches("file:///{path}", "file:///home/me"));
    }

    #[test]
    fn literals_and_broken_templates() {
        assert!(matches("plain://one", "plain://one"));
        assert!(!matches("plain://one", "plain://two"));
        assert!(matches("odd://{x", "odd://{x"));
        assert!(!matches("odd://{x", "odd://y"));
        let long = "a".repeat(super::MAX_LEN + 1);
        assert!(!matches("{+x}", &long));
    }

    #[test]
    fn many_expressions_stay_linear() {
        let template = "x://".to_owned() + &"{a}".repeat(200) + "!";
        let uri = "x://".to_owned() + &"b".repeat(4000);
        assert!(!matches(&template, &uri));
    }
}
