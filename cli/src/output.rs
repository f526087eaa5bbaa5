//! Readable output: aligned plain-text tables, content blocks, JSON documents.

use serde_json::Value;

use crate::sanitize::{clean, clean_line, out_exact};

/// An aligned table: a header row and rows of cells; the last column is not padded.
#[derive(Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Per row: the lines of its last cell after the first (multi-line cells).
    more: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
            more: Vec::new(),
        }
    }

    /// Adds a row (missing cells are empty; newlines become spaces; control characters are
    /// escaped, see [`clean_line`]).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows
            .push(cells.into_iter().map(|c| clean_line(&c)).collect());
        self.more.push(Vec::new());
    }

    /// Adds a row whose last cell keeps its line breaks: each further line is indented to
    /// the last column (blank lines kept, trailing ones dropped; control characters escaped).
    pub fn row_multiline(&mut self, mut cells: Vec<String>) {
        let last = cells.pop().unwrap_or_default();
        let cleaned = clean(&last);
        let mut lines: Vec<String> = cleaned.lines().map(|l| l.trim_end().to_owned()).collect();
        while lines.last().is_some_and(String::is_empty) {
            lines.pop();
        }
        let mut lines = lines.into_iter();
        cells.push(clean_line(&lines.next().unwrap_or_default()));
        self.row(cells);
        if let Some(more) = self.more.last_mut() {
            *more = lines.map(|l| l.replace('\t', "    ")).collect();
        }
    }

    /// The table as text, one line per row (and per further line of a multi-line last
    /// cell), ending with a newline.
    pub fn render(&self) -> String {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let mut l = String::new();
            for (i, width) in widths.iter().enumerate() {
                let cell = cells.get(i).map(String::as_str).unwrap_or("");
                l.push_str(cell);
                if i + 1 < columns {
                    l.extend(std::iter::repeat_n(' ', width - cell.chars().count() + 2));
                }
            }
            let mut l = l.trim_end().to_owned();
            l.push('\n');
            l
        };
        let indent: usize = widths
            .iter()
            .take(columns.saturating_sub(1))
            .map(|w| w + 2)
            .sum();
        let mut out = line(&self.headers);
        for (row, more) in self.rows.iter().zip(&self.more) {
            out.push_str(&line(row));
            for extra in more {
                if !extra.is_empty() {
                    out.extend(std::iter::repeat_n(' ', indent));
                    out.push_str(extra);
                }
                out.push('\n');
            }
        }
        out
    }
}

/// Prints a JSON document, pretty, on stdout.
pub fn print_json(v: &Value) {
    out_exact(&serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string()));
}

/// A string field of a JSON object, or "".
pub fn field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The arguments of an `inputSchema` in short: `message`, `steps?` (optional), with types.
pub fn schema_summary(schema: &Value) -> String {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    props
        .iter()
        .map(|(name, p)| {
            let opt = if required.contains(&name.as_str()) {
                ""
            } else {
                "?"
            };
            let ty = match p.get("type") {
                Some(Value::String(t)) => t.clone(),
                Some(Value::Array(ts)) => ts
                    .iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join("|"),
                _ if p.get("enum").is_some() => "enum".to_owned(),
                _ => "any".to_owned(),
            };
            format!("{name}{opt}:{ty}")
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One content block as text: text as is, anything else described in brackets.
pub fn content_text(block: &Value) -> String {
    let kind = field(block, "type");
    match kind {
        "text" => field(block, "text").to_owned(),
        "image" | "audio" => format!(
            "[{kind} {}, {} bytes base64]",
            field(block, "mimeType"),
            field(block, "data").len()
        ),
        "resource_link" => format!("[resource link {}]", field(block, "uri")),
        "resource" => {
            let r = block.get("resource").unwrap_or(&Value::Null);
            match r.get("text").and_then(Value::as_str) {
                Some(text) => format!("[resource {}]\n{text}", field(r, "uri")),
                None => format!(
                    "[resource {} {}, {} bytes base64]",
                    field(r, "uri"),
                    field(r, "mimeType"),
                    field(r, "blob").len()
                ),
            }
        }
        other => format!("[{other} content]"),
    }
}

/// A server capabilities object in short: `tools (listChanged), logging, …`.
pub fn capabilities_summary(caps: &Value) -> String {
    let Some(map) = caps.as_object() else {
        return "none".into();
    };
    if map.is_empty() {
        return "none".into();
    }
    map.iter()
        .map(|(name, v)| {
            let flags: Vec<&str> = v
                .as_object()
                .map(|o| {
                    o.iter()
                        .filter(|(_, f)| f.as_bool() == Some(true))
                        .map(|(k, _)| k.as_str())
                        .collect()
                })
                .unwrap_or_default();
            if flags.is_empty() {
                name.clone()
            } else {
                format!("{name} ({})", flags.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tables_align() {
        let mut t = Table::new(&["NAME", "DESCRIPTION"]);
        t.row(vec!["echo".into(), "Echo\nit".into()]);
        t.row(vec!["session_info".into(), String::new()]);
        assert_eq!(
            t.render(),
            "NAME          DESCRIPTION\necho          Echo it\nsession_info\n"
        );
    }

    #[test]
    fn a_multiline_last_cell_keeps_its_lines() {
        let mut t = Table::new(&["", ""]);
        t.row(vec!["server".into(), "x 1".into()]);
        t.row_multiline(vec![
            "instructions".into(),
            "Use it well.\n\n- one\x1b[2J\n- two\n\n".into(),
        ]);
        assert_eq!(
            t.render(),
            "\nserver        x 1\ninstructions  Use it well.\n\n              - one\\x1b[2J\n              - two\n"
        );
    }

    #[test]
    fn summaries() {
        let s = json!({"type": "object", "properties": {"ms": {"type": "integer"},
            "steps": {"type": "integer"}}, "required": ["ms"]});
        assert_eq!(schema_summary(&s), "ms:integer steps?:integer");
        assert_eq!(
            capabilities_summary(&json!({"tools": {"listChanged": true}, "logging": {}})),
            "logging, tools (listChanged)"
        );
        assert_eq!(
            content_text(&json!({"type": "image", "mimeType": "image/png", "data": "AAAA"})),
            "[image image/png, 4 bytes base64]"
        );
    }
}
