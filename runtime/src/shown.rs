//! Server text as the client's errors show it: control characters and bidi overrides escaped,
//! so that a message cannot drive a terminal or forge a log line, and bounded in length.
//!
//! A leaf: [`crate::error`] formats its messages with it, [`crate::output_schema`] its
//! validation reports.

/// The longest tool name shown in an error message (characters).
const MAX_NAME_CHARS: usize = 128;

/// `text` with control characters (terminal escapes, carriage returns, bidi overrides) shown
/// as escapes, so server text in an error cannot drive a terminal or forge a log line.
pub(crate) fn clean(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
            let shown: Box<dyn Iterator<Item = char>> = if c.is_control() || bidi {
                Box::new(c.escape_unicode())
            } else {
                Box::new(std::iter::once(c))
            };
            shown
        })
        .collect()
}

/// `text` on one line, with control characters and bidi overrides escaped, cut to at most
/// `max` characters (then ending with `…`): server text in an error stays bounded and cannot
/// drive a terminal.
pub(crate) fn shown(text: &str, max: usize) -> String {
    let escaped = clean(text);
    if escaped.chars().count() <= max {
        return escaped;
    }
    let mut cut: String = escaped.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// A tool name as error messages show it.
pub(crate) fn shown_name(name: &str) -> String {
    shown(name, MAX_NAME_CHARS)
}
