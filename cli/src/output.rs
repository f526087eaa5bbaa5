//! Readable output: aligned plain-text tables, content blocks, JSON documents.

use serde_json::Value;

/// An aligned table: a header row and rows of cells; the last column is not padded.
#[derive(Debug, Default)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new(headers: &[&str]) -> Self {
        Table {
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row (missing cells are empty; newlines become spaces).
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(
            cells
                .into_iter()
                .map(|c| c.split_whitespace().collect::<Vec<_>>().join(" "))
                .collect(),
        );
    }

    /// The table as text, one line per row, ending with a newline.
    pub fn render(&self) -> String {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = self.headers.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        let mut line = |cells: &[String]| {
            let mut l = String::new();
            for (i, width) in widths.iter().enumerate() {
                let cell = cells.get(i).map(String::as_str).unwrap_or("");
                l.push_str(cell);
                if i + 1 < columns {
                    l.extend(std::iter::repeat_n(' ', width - cell.chars().count() + 2));
                }
            }
            out.push_str(l.trim_end());
            out.push('\n');
        };
        line(&self.headers);
        for row in &self.rows {
            line(row);
        }
        out
    }
}

/// Prints a JSON document, pretty, on stdout.
pub fn print_json(v: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    );
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
