//! The rules for names (snake_case, not a keyword) and the typo suggestions of the resolve stage.

/// Rust's strict and reserved keywords (edition 2024): names that cannot be identifiers.
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "try", "type",
    "typeof", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// Whether `word` is a Rust keyword (strict or reserved, edition 2024).
pub fn is_keyword(word: &str) -> bool {
    KEYWORDS.contains(&word)
}

/// Why `name` is not acceptable as a spec name, if it is not.
///
/// Accepted: a lowercase ASCII letter, then lowercase letters and digits, with single underscores
/// between words; not a Rust keyword.
pub fn name_problem(name: &str) -> Option<&'static str> {
    let bytes = name.as_bytes();
    let Some(&first) = bytes.first() else {
        return Some("it is empty");
    };
    let shape_ok = first.is_ascii_lowercase()
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_')
        && !name.ends_with('_')
        && !name.contains("__");
    if !shape_ok {
        return Some(
            "not snake_case (a lowercase letter, then lowercase letters, digits and single `_` \
             between words)",
        );
    }
    if is_keyword(name) {
        return Some("it is a Rust keyword");
    }
    None
}

/// Edit distance between two names (insertions, deletions, substitutions).
pub(super) fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The declared name closest to `name`, if it is close enough to be a likely typo.
pub(super) fn closest<'a>(
    name: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (name.chars().count() / 3).max(1);
    candidates
        .map(|c| (distance(name, c), c))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_get_a_suggestion() {
        assert_eq!(distance("is_redy", "is_ready"), 1);
        assert_eq!(distance("", "ab"), 2);
        assert_eq!(
            closest("is_redy", ["is_ready", "is_ping"].into_iter()),
            Some("is_ready")
        );
        assert_eq!(closest("zzz", ["is_ready"].into_iter()), None);
    }

    #[test]
    fn names_are_checked() {
        assert_eq!(name_problem("ready"), None);
        assert_eq!(name_problem("send_2x"), None);
        assert!(name_problem("").is_some());
        assert!(name_problem("Ready").is_some());
        assert!(name_problem("_x").is_some());
        assert!(name_problem("x_").is_some());
        assert!(name_problem("a__b").is_some());
        assert!(name_problem("9a").is_some());
        assert!(name_problem("a-b").is_some());
        assert_eq!(name_problem("loop"), Some("it is a Rust keyword"));
        assert_eq!(name_problem("self"), Some("it is a Rust keyword"));
    }
}
