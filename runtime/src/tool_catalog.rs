//! The one catalog of the tools a server listed: what the client keeps of the latest
//! `tools/list` answers, fed once per answer and read by whoever needs it.
//!
//! It keeps, by tool name:
//!
//! - the tool's `x-mcp-header` mappings ([`ToolHeaders`]), for the `Mcp-Param-*` headers of
//!   its modern (2026-07-28) `tools/call`s over Streamable HTTP (read by the HTTP transport),
//!   kept only for valid tools with at least one mapping, at most [`MAX_HEADER_TOOLS`] of
//!   them (a tool past that gets no headers, with a warning; none is evicted);
//! - the tool's `outputSchema`, for checking its call results (read by the client's
//!   `output_schema` module), as its serialization's hash and length with the value, at most
//!   [`MAX_OUTPUT_TOOLS`] of them and [`MAX_OUTPUT_BYTES`] of schemas and names (the oldest
//!   recorded are forgotten first); a schema over [`MAX_SCHEMA_BYTES`] is kept as its size
//!   only (its tool's results then fail).
//!
//! Who feeds it: a [`crate::Client`] feeds the catalog it uses from each `tools/list` page its
//! `list_tools` reads (it decodes the page anyway), validating each tool's annotations once.
//! An HTTP link reads a modern `tools/list` answer only when no client reads it: the answer to
//! the machine's own `tools/list` (a relist after a −32020), or every answer on a link whose
//! catalog no client adopted (a link driven by hand). The catalog of an HTTP connector is
//! shared by its links and by the client built on it ([`crate::transport::Connector`]'s hidden
//! `tool_catalog`); other clients keep their own.
//!
//! What it is not: a cache of listings (the response cache keeps whole pages, see
//! `crate::cache`), and not a filter (dropping the tools with invalid annotations from a
//! listing is the client's job, told by [`ToolCatalog::record`]'s answer). It never lists
//! tools by itself.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use mcp_machine::headers::{InvalidToolHeaders, ToolHeaders, validate_input_schema};
use serde_json::Value;

/// How many tools with header mappings are kept at most: a server listing more gets no
/// `Mcp-Param-*` headers for the tools past it (and a warning), so memory stays bounded.
pub const MAX_HEADER_TOOLS: usize = 4096;
/// The most tools whose `outputSchema`s are kept; the oldest recorded go first.
pub(crate) const MAX_OUTPUT_TOOLS: usize = 10_000;
/// The most bytes of kept `outputSchema`s (serialized) and their tools' names; the oldest
/// recorded go first.
pub(crate) const MAX_OUTPUT_BYTES: usize = 8 << 20;
/// The largest `outputSchema` kept (serialized bytes); a larger one makes the tool's results
/// fail with [`crate::Error::InvalidOutputSchema`].
pub(crate) const MAX_SCHEMA_BYTES: usize = 1 << 20;

/// The tools a server listed, by name: their header mappings and their output schemas,
/// bounded in count and bytes. A cheap handle: its clones share one catalog.
///
/// Made empty with [`ToolCatalog::new`]; shared between the links of an HTTP connector with
/// [`crate::transport::HttpConnector::tool_headers`]. Read with [`ToolCatalog::get`]. Not a
/// cache of listings and not a filter (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct ToolCatalog {
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    tools: RwLock<Tools>,
    /// Hashes the schemas (the compiled validators are keyed by it).
    hasher: RandomState,
    /// A client feeds it from the `tools/list` answers it reads.
    adopted: AtomicBool,
}

/// A tool's declared `outputSchema` as kept.
#[derive(Clone, Debug)]
pub(crate) enum Declared {
    /// Kept, with the hash of its serialization and its length.
    Schema {
        /// The schema.
        value: Arc<Value>,
        /// The hash of its serialization (the catalog's hasher).
        hash: u64,
        /// The length of its serialization.
        bytes: usize,
    },
    /// Larger than [`MAX_SCHEMA_BYTES`]: not kept, its results fail.
    Oversized {
        /// The length of its serialization.
        bytes: usize,
    },
}

/// What the catalog keeps of one tool (an entry holds at least one of the two).
#[derive(Debug, Default)]
struct Entry {
    headers: Option<ToolHeaders>,
    output: Option<Output>,
}

/// A kept `outputSchema`.
#[derive(Debug)]
struct Output {
    /// When it was recorded (the order of eviction).
    seq: u64,
    declared: Declared,
    /// What it counts against [`MAX_OUTPUT_BYTES`].
    bytes: usize,
}

#[derive(Debug, Default)]
struct Tools {
    by_name: HashMap<String, Entry>,
    /// Tool names with an output schema by `seq`, oldest first.
    order: BTreeMap<u64, String>,
    next_seq: u64,
    /// Bytes of the kept output schemas and their names.
    output_bytes: usize,
    /// Entries with header mappings.
    with_headers: usize,
}

/// One tool of a `tools/list` page, as the catalog reads it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Listed<'a> {
    /// Its name.
    pub(crate) name: &'a str,
    /// Its `inputSchema` (`None` or `Null`: none).
    pub(crate) input_schema: Option<&'a Value>,
    /// Its `outputSchema` (`None`: none; `null` counts as none).
    pub(crate) output_schema: Option<&'a Value>,
}

impl<'a> From<&'a crate::types::Tool> for Listed<'a> {
    fn from(tool: &'a crate::types::Tool) -> Self {
        Listed {
            name: &tool.name,
            input_schema: Some(&tool.input_schema),
            output_schema: tool.output_schema.as_ref(),
        }
    }
}

/// What one recording of a page keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Keep {
    /// The tools' header mappings (validating their annotations).
    pub(crate) headers: bool,
    /// The tools' output schemas.
    pub(crate) outputs: bool,
}

impl ToolCatalog {
    /// An empty catalog.
    pub fn new() -> Self {
        Self::default()
    }

    /// The header mappings of `tool`, if it was listed valid and with at least one.
    pub fn get(&self, tool: &str) -> Option<ToolHeaders> {
        self.read().by_name.get(tool)?.headers.clone()
    }

    /// How many tools the catalog holds something for (header mappings, an output schema).
    pub fn len(&self) -> usize {
        self.read().by_name.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Tools> {
        self.shared.tools.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Tools> {
        self.shared.tools.write().unwrap_or_else(|e| e.into_inner())
    }

    /// A client feeds this catalog from the `tools/list` answers it reads: the links sharing
    /// it leave those answers unread.
    pub(crate) fn adopt(&self) {
        self.shared.adopted.store(true, Ordering::Relaxed);
    }

    /// Whether a link must read a `tools/list` answer to keep the catalog fed: always for an
    /// answer nobody else reads (`own`: the machine's own request), else only when no client
    /// adopted the catalog.
    pub(crate) fn link_feeds(&self, own: bool) -> bool {
        own || !self.shared.adopted.load(Ordering::Relaxed)
    }

    /// The declared `outputSchema` of `tool`, if one is kept.
    pub(crate) fn output(&self, tool: &str) -> Option<Declared> {
        let tools = self.read();
        Some(tools.by_name.get(tool)?.output.as_ref()?.declared.clone())
    }

    /// Records one `tools/list` page: for each tool named in it, what `keep` asks for is
    /// replaced by what it says now (no mappings for a tool without any or with invalid ones;
    /// no output schema for a tool that declares none; a tool with invalid annotations, left
    /// out of the listing, keeps the output schema it had). Returns the tools whose
    /// annotations are invalid, by their index in `tools` (only when `keep.headers`).
    pub(crate) fn record<'a>(
        &self,
        tools: impl IntoIterator<Item = Listed<'a>>,
        keep: Keep,
    ) -> Vec<(usize, InvalidToolHeaders)> {
        let mut invalid = Vec::new();
        if !keep.headers && !keep.outputs {
            return invalid;
        }
        let mut forgotten = 0;
        let mut catalog = self.write();
        for (i, tool) in tools.into_iter().enumerate() {
            if keep.headers {
                let input = tool.input_schema.unwrap_or(&Value::Null);
                match validate_input_schema(tool.name, input) {
                    Ok(headers) => catalog.put_headers(tool.name, headers),
                    Err(e) => {
                        catalog.put_headers(tool.name, ToolHeaders::default());
                        invalid.push((i, e));
                        // Left out of the listing: what it declares is not kept.
                        continue;
                    }
                }
            }
            if keep.outputs {
                let declared = tool
                    .output_schema
                    .filter(|s| !s.is_null())
                    .map(|schema| self.declared(schema));
                forgotten += catalog.put_output(tool.name, declared);
            }
        }
        drop(catalog);
        if forgotten > 0 {
            tracing::warn!(target: "mcp::tools", forgotten,
                "outputSchemas forgotten, oldest first (too many or too large): those tools' results are not checked");
        }
        invalid
    }

    /// Records the header mappings of the tools of a modern `tools/list` response `message`
    /// (a whole JSON-RPC response) a link carried and no client reads; anything that is not
    /// one with a `tools` array is ignored. Entries without a string `name` are skipped.
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
        let listed = tools.iter().filter_map(|tool| {
            Some(Listed {
                name: tool.get("name")?.as_str()?,
                input_schema: tool.get("inputSchema"),
                output_schema: None,
            })
        });
        let keep = Keep {
            headers: true,
            outputs: false,
        };
        for (_, e) in self.record(listed, keep) {
            tracing::debug!(target: "mcp::http", error = %e, "a tool's x-mcp-header annotations are invalid");
        }
    }

    /// A declared schema as kept: its hash and size, or only its size when over the bound.
    fn declared(&self, schema: &Value) -> Declared {
        let (hash, bytes) = self.measure(schema);
        if bytes > MAX_SCHEMA_BYTES {
            Declared::Oversized { bytes }
        } else {
            Declared::Schema {
                value: Arc::new(schema.clone()),
                hash,
                bytes,
            }
        }
    }

    /// The hash of `schema`'s serialization and its length in bytes.
    fn measure(&self, schema: &Value) -> (u64, usize) {
        struct Sink<H> {
            hasher: H,
            bytes: usize,
        }
        impl<H: Hasher> std::io::Write for Sink<H> {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.hasher.write(buf);
                self.bytes += buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let mut sink = Sink {
            hasher: self.shared.hasher.build_hasher(),
            bytes: 0,
        };
        // Writing a Value to this sink cannot fail.
        let _ = serde_json::to_writer(&mut sink, schema);
        (sink.hasher.finish(), sink.bytes)
    }
}

impl Tools {
    /// Replaces the header mappings of `name` (none when `headers` is empty, or when the
    /// catalog holds [`MAX_HEADER_TOOLS`] tools with mappings already: warned).
    fn put_headers(&mut self, name: &str, headers: ToolHeaders) {
        if let Some(entry) = self.by_name.get_mut(name)
            && entry.headers.take().is_some()
        {
            self.with_headers -= 1;
        }
        if headers.is_empty() {
            self.drop_if_empty(name);
            return;
        }
        if self.with_headers >= MAX_HEADER_TOOLS {
            tracing::warn!(target: "mcp::http", tool = name, max = MAX_HEADER_TOOLS,
                "too many tools with x-mcp-header mappings: this one gets no Mcp-Param headers");
            self.drop_if_empty(name);
            return;
        }
        self.with_headers += 1;
        self.by_name.entry(name.to_owned()).or_default().headers = Some(headers);
    }

    /// Records `declared` as the output schema of `name` (`None`: forgets it); how many older
    /// ones were forgotten to stay within the bounds.
    fn put_output(&mut self, name: &str, declared: Option<Declared>) -> usize {
        if let Some(old) = self.by_name.get_mut(name).and_then(|e| e.output.take()) {
            self.order.remove(&old.seq);
            self.output_bytes -= old.bytes;
        }
        let Some(declared) = declared else {
            self.drop_if_empty(name);
            return 0;
        };
        let bytes = name.len()
            + match &declared {
                Declared::Schema { bytes, .. } => *bytes,
                Declared::Oversized { .. } => 0,
            };
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(seq, name.to_owned());
        self.by_name.entry(name.to_owned()).or_default().output = Some(Output {
            seq,
            declared,
            bytes,
        });
        self.output_bytes += bytes;
        let mut forgotten = 0;
        while self.order.len() > MAX_OUTPUT_TOOLS || self.output_bytes > MAX_OUTPUT_BYTES {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            if let Some(gone) = self.by_name.get_mut(&oldest).and_then(|e| e.output.take()) {
                self.output_bytes -= gone.bytes;
                forgotten += 1;
            }
            self.drop_if_empty(&oldest);
        }
        forgotten
    }

    /// Forgets the entry of `name` when it holds nothing.
    fn drop_if_empty(&mut self, name: &str) {
        if self
            .by_name
            .get(name)
            .is_some_and(|e| e.headers.is_none() && e.output.is_none())
        {
            self.by_name.remove(name);
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

    const HEADERS: Keep = Keep {
        headers: true,
        outputs: false,
    };
    const OUTPUTS: Keep = Keep {
        headers: false,
        outputs: true,
    };

    /// Records raw tools (skipping those without a string name), as a link would.
    fn record(c: &ToolCatalog, tools: &[Value], keep: Keep) -> Vec<InvalidToolHeaders> {
        let listed = tools.iter().filter_map(|t| {
            Some(Listed {
                name: t.get("name")?.as_str()?,
                input_schema: t.get("inputSchema"),
                output_schema: t.get("outputSchema"),
            })
        });
        c.record(listed, keep).into_iter().map(|(_, e)| e).collect()
    }

    fn headers_kept(c: &ToolCatalog) -> usize {
        c.read().with_headers
    }

    #[test]
    fn a_page_replaces_the_entries_of_its_tools() {
        let c = ToolCatalog::new();
        assert!(record(&c, &[with_header("x", "A"), with_header("y", "B")], HEADERS).is_empty());
        assert_eq!(c.len(), 2);
        // y turns invalid, x loses its annotation; z is not named and keeps its entry.
        record(&c, &[with_header("z", "C")], HEADERS);
        let invalid = record(
            &c,
            &[with_header("y", "a b"), json!({"name": "x"}), json!({})],
            HEADERS,
        );
        assert_eq!(invalid.len(), 1);
        assert_eq!(invalid[0].tool, "y");
        assert!(c.get("x").is_none() && c.get("y").is_none());
        assert_eq!(c.get("z").unwrap().mappings()[0].name, "C");
        assert_eq!(headers_kept(&c), 1);
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn invalid_tools_are_named_by_their_place_in_the_page() {
        let c = ToolCatalog::new();
        let page = [with_header("x", "A"), with_header("x", "a b")];
        let listed = page.iter().map(|t| Listed {
            name: "x",
            input_schema: t.get("inputSchema"),
            output_schema: None,
        });
        let invalid = c.record(listed, HEADERS);
        assert_eq!(invalid.len(), 1);
        assert_eq!(invalid[0].0, 1);
    }

    #[test]
    fn responses_are_read_only_when_they_list_tools() {
        let c = ToolCatalog::new();
        c.record_response(b"not json");
        c.record_response(br#"{"jsonrpc":"2.0","id":1,"result":{"tools":7}}"#);
        assert!(c.is_empty());
        let page = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [with_header("x", "A")]}});
        c.record_response(page.to_string().as_bytes());
        assert!(c.get("x").is_some());
    }

    #[test]
    fn the_header_mappings_are_bounded() {
        let c = ToolCatalog::new();
        let tools: Vec<_> = (0..MAX_HEADER_TOOLS + 10)
            .map(|i| with_header(&format!("t{i}"), "A"))
            .collect();
        record(&c, &tools, HEADERS);
        assert_eq!(headers_kept(&c), MAX_HEADER_TOOLS);
        assert_eq!(c.len(), MAX_HEADER_TOOLS);
        // The first ones are kept, none evicted.
        assert!(c.get("t0").is_some());
        assert!(c.get(&format!("t{}", MAX_HEADER_TOOLS)).is_none());
    }

    #[test]
    fn the_output_schemas_are_bounded_in_count_and_bytes_oldest_first() {
        let c = ToolCatalog::new();
        let many: Vec<Value> = (0..MAX_OUTPUT_TOOLS + 5)
            .map(|i| json!({"name": format!("m{i}"), "outputSchema": true}))
            .collect();
        record(&c, &many, OUTPUTS);
        {
            let tools = c.read();
            assert_eq!(tools.by_name.len(), MAX_OUTPUT_TOOLS);
            assert_eq!(tools.order.len(), MAX_OUTPUT_TOOLS);
            assert!(tools.output_bytes <= MAX_OUTPUT_BYTES);
        }
        assert!(c.output("m0").is_none());
        assert!(c.output(&format!("m{}", MAX_OUTPUT_TOOLS + 4)).is_some());
        let big: Vec<Value> = (0..20)
            .map(|i| {
                let schema = json!({"description": "d".repeat(600_000), "minimum": i});
                json!({"name": format!("big{i}"), "outputSchema": schema})
            })
            .collect();
        record(&c, &big, OUTPUTS);
        assert!(c.read().output_bytes <= MAX_OUTPUT_BYTES);
        assert!(c.output("big19").is_some());
        assert!(c.output("big0").is_none());
        // Too large to keep: its size only.
        let huge = json!({"description": "d".repeat(MAX_SCHEMA_BYTES), "type": "object"});
        record(
            &c,
            &[json!({"name": "huge", "outputSchema": huge})],
            OUTPUTS,
        );
        assert!(matches!(c.output("huge"), Some(Declared::Oversized { .. })));
    }

    #[test]
    fn headers_and_outputs_of_one_tool_live_and_go_apart() {
        let c = ToolCatalog::new();
        let mut tool = with_header("x", "A");
        tool["outputSchema"] = json!({"type": "object"});
        record(
            &c,
            &[tool],
            Keep {
                headers: true,
                outputs: true,
            },
        );
        assert!(c.get("x").is_some() && c.output("x").is_some());
        // Listed again without an output schema (null is none): the mappings stay.
        record(&c, &[json!({"name": "x", "outputSchema": null})], OUTPUTS);
        assert!(c.get("x").is_some() && c.output("x").is_none());
        // And without annotations: nothing is left.
        record(&c, &[json!({"name": "x"})], HEADERS);
        assert!(c.is_empty());
        // Recording nothing reads nothing.
        let nothing = Keep {
            headers: false,
            outputs: false,
        };
        assert!(record(&c, &[with_header("y", "a b")], nothing).is_empty());
        assert!(c.is_empty());
    }

    #[test]
    fn links_read_only_what_no_client_reads() {
        let c = ToolCatalog::new();
        assert!(c.link_feeds(false) && c.link_feeds(true));
        c.clone().adopt();
        assert!(!c.link_feeds(false) && c.link_feeds(true));
    }
}
