//! The text of a spec: one file, or a manifest and one file per concern, read as one document.
//!
//! A spec split into files is parsed as the concatenation of its files (the manifest first,
//! then the concern files in the manifest's order), so every span is an offset into that one
//! text. [`Sources`] maps such an offset back to the file it falls in and to a line of that
//! file, for diagnostics and for the rows' `file:line`. [`Sources::read`] is the one function of
//! this crate that reads files: the spec directory's manifest and the concern files it names.

use std::ops::Range;
use std::path::Path;

/// The manifest's file name in a spec directory.
pub const MANIFEST: &str = "machine.toml";

/// The concern files a manifest names, in order: `[machine] concerns`. Each is read from
/// `<name>.toml` beside the manifest. Empty when the text is not a manifest (a one-file spec, or
/// text that does not parse: the full parse then reports why). Names that are not snake_case
/// are left out (they cannot be file stems of a concern; validation reports them).
pub fn manifest_concerns(manifest: &str) -> Vec<String> {
    let Ok(value) = manifest.parse::<toml::Table>() else {
        return Vec::new();
    };
    value
        .get("machine")
        .and_then(|m| m.get("concerns"))
        .and_then(|c| c.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str())
                .filter(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// One file of a spec: its path as given (used in messages only) and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The path, as the caller names it (for example `spec/calls.toml`).
    pub path: String,
    /// Where the file's text starts in [`Sources::text`].
    pub start: usize,
    /// The file's length in bytes.
    pub len: usize,
}

/// The files of one spec and their concatenation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sources {
    files: Vec<SourceFile>,
    text: String,
}

impl Sources {
    /// A spec of one file.
    pub fn one(path: &str, text: &str) -> Self {
        Sources::new([(path, text)])
    }

    /// A spec of several files, concatenated in the order given. A newline is put between two
    /// files when the first does not end with one, so no line of one file runs into the next.
    pub fn new<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut text = String::new();
        let mut out = Vec::new();
        for (path, body) in files {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            out.push(SourceFile {
                path: path.to_owned(),
                start: text.len(),
                len: body.len(),
            });
            text.push_str(body);
        }
        Sources { files: out, text }
    }

    /// Reads a spec: a directory holding `machine.toml` (the manifest) and the concern files its
    /// `[machine] concerns` names (`<name>.toml`, in that order), or a single spec file. Paths in
    /// messages are `path` joined with the file name, as given.
    pub fn read(path: &Path) -> std::io::Result<Sources> {
        if !path.is_dir() {
            let text = std::fs::read_to_string(path)?;
            return Ok(Sources::one(&path.display().to_string(), &text));
        }
        let manifest = path.join(MANIFEST);
        let text = std::fs::read_to_string(&manifest)?;
        let mut files = vec![(manifest.display().to_string(), text)];
        for name in manifest_concerns(&files[0].1) {
            let file = path.join(format!("{name}.toml"));
            let text = std::fs::read_to_string(&file)
                .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", file.display())))?;
            files.push((file.display().to_string(), text));
        }
        Ok(Sources::new(
            files.iter().map(|(p, t)| (p.as_str(), t.as_str())),
        ))
    }

    /// The concatenated text every span points into.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The files, in order.
    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }

    /// The index of the file `offset` falls in (the last file for an offset past the end; 0
    /// when there is no file).
    pub fn file_of(&self, offset: usize) -> usize {
        self.files
            .iter()
            .rposition(|f| f.start <= offset)
            .unwrap_or(0)
    }

    /// The path of the file `offset` falls in.
    pub fn path_of(&self, offset: usize) -> &str {
        self.files
            .get(self.file_of(offset))
            .map_or("", |f| f.path.as_str())
    }

    /// The text of file `index` and where it starts in [`Sources::text`].
    pub fn file_text(&self, index: usize) -> (&str, usize) {
        match self.files.get(index) {
            Some(f) => (&self.text[f.start..f.start + f.len], f.start),
            None => ("", 0),
        }
    }

    /// The span of file `index` in [`Sources::text`].
    pub fn file_span(&self, index: usize) -> Range<usize> {
        self.files
            .get(index)
            .map_or(0..0, |f| f.start..f.start + f.len)
    }

    /// The 1-based line, within its own file, of byte `offset` of [`Sources::text`].
    pub fn line_of(&self, offset: usize) -> usize {
        let (text, start) = self.file_text(self.file_of(offset));
        line_column(text, offset.saturating_sub(start)).0
    }

    /// Every path, joined with `, ` (for a summary line).
    pub fn paths(&self) -> String {
        let paths: Vec<&str> = self.files.iter().map(|f| f.path.as_str()).collect();
        paths.join(", ")
    }
}

/// 1-based line and column (in characters) of byte `offset` in `source` (clamped to the text).
pub fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let offset = floor_boundary(source, offset.min(source.len()));
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = source[line_start..offset].chars().count() + 1;
    (line, column)
}

pub(crate) fn floor_boundary(source: &str, mut i: usize) -> usize {
    while i > 0 && !source.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_map_to_their_file_and_line() {
        let s = Sources::new([("a.toml", "x = 1\ny = 2"), ("b.toml", "z = 3\n")]);
        assert_eq!(s.text(), "x = 1\ny = 2\nz = 3\n");
        assert_eq!(s.file_of(0), 0);
        assert_eq!(s.line_of(6), 2);
        assert_eq!(s.file_of(12), 1);
        assert_eq!(s.path_of(12), "b.toml");
        assert_eq!(s.line_of(12), 1);
        assert_eq!(s.file_text(1), ("z = 3\n", 12));
    }
}
