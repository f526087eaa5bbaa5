//! Terminal safety: everything mcpc prints for a human goes through [`clean`].
//!
//! A server controls much of what mcpc shows (tool output, descriptions, resource text, log
//! data, its name, its stderr, elicitation text, progress messages, error messages). Written
//! raw, such text could drive the terminal: set the window title (`ESC ] 0 ; … BEL`), clear
//! the screen (`ESC [ 2 J`), overwrite a line with a carriage return, or reorder what the user
//! reads with Unicode bidi overrides. [`clean`] keeps newline and tab and replaces every other
//! C0 control, DEL, every C1 control and the bidi overrides U+202A–U+202E and U+2066–U+2069
//! with a visible escape (`\x1b`, `\x07`, `\u{202e}`).
//!
//! The print macros `outln!`, `out!` and `errln!` (this module is declared first, with
//! `#[macro_use]`) clean what they format; `--json` documents go out exact through [`out_exact`] (serde_json
//! already escapes C0 controls inside strings). A unit test fails if any other module calls the
//! standard print macros.
//!
//! A URL is shown through [`redact_url`]: a password in it never reaches the terminal.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io::Write;

/// Whether `c` must not reach the terminal as it is.
fn is_unsafe(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

/// `s` with every control character except newline and tab, and every Unicode bidi
/// override, replaced by a visible escape. Borrowed when nothing had to change.
pub fn clean(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !is_unsafe(c) {
            out.push(c);
        } else if u32::from(c) < 0x100 {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
    }
    Cow::Owned(out)
}

/// [`clean`], then every run of whitespace (newlines and tabs included) folded into one space:
/// for text that must stay on one line (table cells, the final error line).
pub fn clean_line(s: &str) -> String {
    clean(s).split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `url` as mcpc prints it: a password in it (`http://user:pw@host/`) becomes `***`.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            let hidden = if userinfo.contains(':') { ":***" } else { "" };
            format!("{scheme}://{user}{hidden}@{host}{path}")
        }
        None => url.to_owned(),
    }
}

/// Writes `text`, cleaned, to stdout (a closed stdout is ignored).
pub fn out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(clean(text).as_bytes());
    let _ = stdout.flush();
}

/// Writes `text`, cleaned, to stderr.
pub fn err(text: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_all(clean(text).as_bytes());
    let _ = stderr.flush();
}

/// Writes a machine-readable document (JSON) to stdout exactly as it is, plus a newline.
pub fn out_exact(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.write_all(b"\n");
    let _ = stdout.flush();
}

/// A writer that cleans what passes through it (the `-v` log on stderr: it carries the
/// server's stderr lines). Each write is cleaned on its own; `tracing` writes one whole event
/// per call.
#[derive(Debug)]
pub struct CleanWriter<W>(pub W);

impl<W: Write> Write for CleanWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(clean(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// `println!` for human-readable output: formats, cleans, writes to stdout.
macro_rules! outln {
    () => { $crate::sanitize::out("\n") };
    ($($arg:tt)*) => { $crate::sanitize::out(&format!("{}\n", format_args!($($arg)*))) };
}

/// `print!` for human-readable output: formats, cleans, writes to stdout.
macro_rules! out {
    ($($arg:tt)*) => { $crate::sanitize::out(&format!($($arg)*)) };
}

/// `eprintln!` for human-readable output: formats, cleans, writes to stderr.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::sanitize::err(&format!("{}\n", format_args!($($arg)*))) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_bidi_overrides_are_escaped() {
        let hostile = "a\x1b]0;pwned\x07b\x1b[2Jc\rd\u{202e}e\u{2066}f\u{85}g\x7f\0";
        let cleaned = clean(hostile);
        assert_eq!(
            cleaned,
            "a\\x1b]0;pwned\\x07b\\x1b[2Jc\\x0dd\\u{202e}e\\u{2066}f\\x85g\\x7f\\x00"
        );
        assert!(!cleaned.chars().any(is_unsafe));
    }

    #[test]
    fn newline_tab_and_ordinary_text_pass() {
        let text = "line 1\n\tline 2 — ünïcödé ✓ 日本";
        assert!(matches!(clean(text), Cow::Borrowed(_)));
        assert_eq!(clean_line("a\n b\t\tc\r"), "a b c\\x0d");
    }

    #[test]
    fn the_writer_cleans() {
        let mut w = CleanWriter(Vec::new());
        w.write_all(b"log \x1b[31mred\n").unwrap();
        assert_eq!(w.0, b"log \\x1b[31mred\n");
    }

    /// Every print path goes through this module: no other module (nor submodule, in a
    /// directory of `src/`) may use the standard print macros (they would bypass [`clean`]).
    #[test]
    fn no_module_prints_around_this_one() {
        let mut dirs = vec![std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src")];
        let mut files = Vec::new();
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    files.push(path);
                }
            }
        }
        let mut offenders = Vec::new();
        for path in files {
            if path.file_name().is_some_and(|n| n == "sanitize.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (i, line) in text.lines().enumerate() {
                for bad in ["println!", "print!(", "eprint!(", "dbg!("] {
                    if line.contains(bad) {
                        offenders.push(format!("{}:{}: {}", path.display(), i + 1, line.trim()));
                    }
                }
            }
        }
        assert!(offenders.is_empty(), "raw prints: {offenders:#?}");
    }
}
