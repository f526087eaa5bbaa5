//! The `x-mcp-header` mappings of the tools a server listed, for the `Mcp-Param-*` headers of
//! modern (2026-07-28) `tools/call` POSTs.
//!
//! The Streamable HTTP leg fills it from the responses to the modern `tools/list` requests it
//! posted, and reads it for each modern `tools/call`. It keeps the valid tools only, and only
//! those with at least one mapping. Not a tool cache and not a filter: the response bodies are
//! delivered unchanged, and dropping invalid tools from a listing is the client's job.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use mcp_machine::headers::{InvalidToolHeaders, ToolHeaders, validate_tool};
use serde_json::Value;

/// How many tools with mappings are remembered at most: a server listing more gets no
/// `Mcp-Param-*` headers for the tools past it (and a warning), so memory stays bounded.
pub const MAX_TOOLS: usize = 4096;

/// The header mappings of tools, by tool name, shared by the clones of one registry. By
/// default each HTTP link has its own ([`super::HttpConnector::tool_headers`] shares one).
#[derive(Clone, Debug, Default)]
pub struct ToolHeaderRegistry {
    tools: Arc<RwLock<HashMap<String, ToolHeaders>>>,
}

impl ToolHeaderRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The mappings of `tool`, if it was listed valid and with at least one.
    pub fn get(&self, tool: &str) -> Option<ToolHeaders> {
        self.tools
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(tool)
            .cloned()
    }

    /// How many tools with mappings are known.
    pub fn len(&self) -> usize {
        self.tools.read().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Whether no tool with mappings is known.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Records one page of a `tools/list` result (its `tools` array): the entries of the tools
    /// named in it are replaced by what they say now (none for a tool without mappings or with
    /// invalid ones). Returns why each invalid tool is invalid. Entries without a string `name`
    /// are skipped.
    pub fn record(&self, tools: &[Value]) -> Vec<InvalidToolHeaders> {
        let mut invalid = Vec::new();
        let mut map = self.tools.write().unwrap_or_else(|e| e.into_inner());
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else {
                continue;
            };
            map.remove(name);
            match validate_tool(tool) {
                Ok(headers) if headers.is_empty() => {}
                Ok(headers) if map.len() < MAX_TOOLS => {
                    map.insert(name.to_owned(), headers);
                }
                Ok(_) => {
                    tracing::warn!(target: "mcp::http", tool = name, max = MAX_TOOLS,
                        "too many tools with x-mcp-header mappings: this one gets no Mcp-Param headers");
                }
                Err(e) => invalid.push(e),
            }
        }
        invalid
    }

    /// Records the result of a `tools/list` response `message` (a whole JSON-RPC response),
    /// if it is one with a `tools` array; anything else is ignored.
    pub(crate) fn record_response(&self, message: &[u8]) {
        let Ok(response) = serde_json::from_slice::<Value>(message) else {
            return;
        };
        let Some(tools) = response
            .get("result")
            .and_then(|r| r.get("tools"))
            .and_then(Value::as_array)
        else {
            return;
        };
        for e in self.record(tools) {
            tracing::debug!(target: "mcp::http", error = %e, "a tool's x-mcp-header annotations are invalid");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn with_header(name: &str, header: &str) -> Value {
        json!({"name": name, "inputSchema": {"type": "object", "properties": {
            "a": {"type": "string", "x-mcp-header": header}}}})
    }

    #[test]
    fn a_page_replaces_the_entries_of_its_tools() {
        let r = ToolHeaderRegistry::new();
        assert!(
            r.record(&[with_header("x", "A"), with_header("y", "B")])
                .is_empty()
        );
        assert_eq!(r.len(), 2);
        // y turns invalid, x loses its annotation; z is not named and keeps its entry.
        r.record(&[with_header("z", "C")]);
        let invalid = r.record(&[with_header("y", "a b"), json!({"name": "x"}), json!({})]);
        assert_eq!(invalid.len(), 1);
        assert_eq!(invalid[0].tool, "y");
        assert!(r.get("x").is_none() && r.get("y").is_none());
        assert_eq!(r.get("z").unwrap().mappings()[0].name, "C");
    }

    #[test]
    fn responses_are_read_only_when_they_list_tools() {
        let r = ToolHeaderRegistry::new();
        r.record_response(b"not json");
        r.record_response(br#"{"jsonrpc":"2.0","id":1,"result":{"tools":7}}"#);
        assert!(r.is_empty());
        let page = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [with_header("x", "A")]}});
        r.record_response(page.to_string().as_bytes());
        assert!(r.get("x").is_some());
    }

    #[test]
    fn the_registry_is_bounded() {
        let r = ToolHeaderRegistry::new();
        let tools: Vec<_> = (0..MAX_TOOLS + 10)
            .map(|i| with_header(&format!("t{i}"), "A"))
            .collect();
        r.record(&tools);
        assert_eq!(r.len(), MAX_TOOLS);
    }
}
