//! Checking a tool's `structuredContent` against the `outputSchema` it declared.
//!
//! The MCP specification (`server/tools.mdx`) says a server that declares an `outputSchema`
//! MUST return structured results conforming to it, and clients SHOULD validate them. This
//! module holds what [`crate::Client`] needs for that:
//!
//! - the schemas of the latest tool listing, by tool name, are kept (bounded in count and
//!   bytes like everything a server sends) in the client's [`ToolCatalog`], not here;
//! - a bounded pre-check of a schema before it is compiled ([`precheck`]): how deep its
//!   subschemas nest, how many there are with every `$ref` expanded where it is used, how many
//!   regular expressions it has, that every `$ref` resolves *inside* the schema, and that no
//!   recursion can make validation exponential;
//! - compiling with the `jsonschema` crate (Draft 2020-12 when `$schema` is absent), built
//!   without any retrieval code (no default features) and with its offline option: no `$ref`
//!   is ever fetched, over the network or from a file, and one that is not inside the schema
//!   makes the schema invalid (rejected, never treated as permissive); patterns use the
//!   linear-time `regex` engine;
//! - a small LRU of compiled validators keyed by tool name and a hash of the schema, built
//!   lazily at the first result that needs one;
//! - the check of one result ([`OutputSchemas::verdict`]), a typed [`Verdict`], and its
//!   mapping to [`Error::OutputSchemaMismatch`] or [`Error::InvalidOutputSchema`].
//!
//! What it does not do: it never lists tools by itself (a tool the client never listed is not
//! checked), and it does not check `inputSchema`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::shown::shown;
use crate::tool_catalog::{Declared, MAX_SCHEMA_BYTES, ToolCatalog};
use crate::types::CallToolResult;
use crate::{Error, Result};

/// The deepest nesting of subschemas the pre-check accepts (a `$ref` target nests where it is
/// used).
pub(crate) const MAX_DEPTH: usize = 64;
/// The most subschemas the pre-check accepts, counted with every `$ref` expanded where it is
/// used (a definition referenced 100 times counts 100 times): what validating one value costs
/// at most per place in it.
pub(crate) const MAX_SUBSCHEMAS: usize = 10_000;
/// The most schemas with `unevaluatedProperties` or `unevaluatedItems` nested in one another
/// (a `$ref` target nests where it is used): the `jsonschema` crate evaluates the subschemas
/// under such a schema again to find what they evaluated, so each level can double the work.
const MAX_UNEVALUATED_NESTING: usize = 6;
/// The most keywords the pre-check looks at (the expanded walk), a bound on its own work.
const MAX_STEPS: usize = 1_000_000;
/// The deepest JSON nesting of a schema document the pre-check reads (one parsed from the
/// wire nests at most 128 deep: `serde_json`'s limit).
const MAX_DOCUMENT_DEPTH: usize = 256;
/// The most regular expressions (`pattern` values, `patternProperties` keys) in one schema.
const MAX_PATTERNS: usize = 64;
/// The compiled size bound of each regular expression, and of its lazy DFA's cache.
const REGEX_SIZE_LIMIT: usize = 256 * 1024;

/// How many compiled validators are kept (least recently used go first).
pub(crate) const CACHE_CAPACITY: usize = 256;

/// The most validation errors reported by one [`Error::OutputSchemaMismatch`] (one more line
/// says how many were left out).
pub(crate) const MAX_REPORTED_ERRORS: usize = 16;
/// The longest error message, reason or instance path shown (characters).
const MAX_MESSAGE_CHARS: usize = 240;

/// What checking one `tools/call` result against its tool's `outputSchema` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Not checked: checking is off, the tool was never listed or declares no `outputSchema`,
    /// or the result is a tool error (`isError: true`).
    Unchecked,
    /// `structuredContent` conforms to the schema.
    Conforms,
    /// `structuredContent` does not conform, or is missing: at most
    /// [`MAX_REPORTED_ERRORS`] lines (plus one saying how many more), each starting with
    /// the instance path, already escaped and bounded.
    Mismatch(Vec<String>),
    /// The schema cannot be used: why (escaped and bounded).
    InvalidSchema(String),
}

/// The compiled validators of the listed tools' `outputSchema`s, for one client; the
/// schemas themselves are kept in its [`ToolCatalog`].
pub(crate) struct OutputSchemas {
    enabled: bool,
    catalog: ToolCatalog,
    validators: Mutex<Cache>,
}

impl std::fmt::Debug for OutputSchemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutputSchemas")
            .field("enabled", &self.enabled)
            .finish_non_exhaustive()
    }
}

impl OutputSchemas {
    /// Results checked when `enabled`, against the schemas `catalog` keeps (which the client
    /// feeds with them only then).
    pub(crate) fn new(enabled: bool, catalog: ToolCatalog) -> Self {
        OutputSchemas {
            enabled,
            catalog,
            validators: Mutex::new(Cache::default()),
        }
    }

    /// Whether results are checked (and the listed tools' schemas kept for it).
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// Checks the result of calling `tool`: the result back if it passes (or is not checked),
    /// else [`Error::OutputSchemaMismatch`] or [`Error::InvalidOutputSchema`] carrying it.
    pub(crate) fn check(&self, tool: &str, result: CallToolResult) -> Result<CallToolResult> {
        match self.verdict(tool, &result) {
            Verdict::Unchecked | Verdict::Conforms => Ok(result),
            Verdict::Mismatch(errors) => Err(Error::OutputSchemaMismatch {
                tool: tool.to_owned(),
                errors,
                result: Box::new(result),
            }),
            Verdict::InvalidSchema(reason) => Err(Error::InvalidOutputSchema {
                tool: tool.to_owned(),
                reason,
                result: Box::new(result),
            }),
        }
    }

    /// What checking the result of calling `tool` finds.
    pub(crate) fn verdict(&self, tool: &str, result: &CallToolResult) -> Verdict {
        if !self.enabled || result.failed() {
            return Verdict::Unchecked;
        }
        let Some(declared) = self.catalog.output(tool) else {
            return Verdict::Unchecked;
        };
        let (schema, hash) = match declared {
            Declared::Oversized { bytes } => {
                return Verdict::InvalidSchema(format!(
                    "the outputSchema is {bytes} bytes, more than the {MAX_SCHEMA_BYTES} this \
                     client accepts"
                ));
            }
            Declared::Schema { value, hash, .. } => (value, hash),
        };
        let validator = match self.validator(tool, hash, &schema) {
            Ok(v) => v,
            Err(reason) => return Verdict::InvalidSchema(reason),
        };
        let Some(structured) = &result.structured_content else {
            return Verdict::Mismatch(vec![
                "(root): structuredContent is missing, but the tool declares an outputSchema"
                    .to_owned(),
            ]);
        };
        let errors = violations(&validator, structured);
        if errors.is_empty() {
            Verdict::Conforms
        } else {
            Verdict::Mismatch(errors)
        }
    }

    /// The compiled validator of `schema` for `tool`, from the cache or compiled now.
    fn validator(
        &self,
        tool: &str,
        hash: u64,
        schema: &Arc<Value>,
    ) -> std::result::Result<Arc<jsonschema::Validator>, String> {
        if let Some(found) = self
            .validators
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(tool, hash, schema)
        {
            return found;
        }
        // Compiled outside the lock: two calls may both compile it, and one entry is kept.
        let compiled = compile(schema).map(Arc::new);
        self.validators
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(tool, hash, Arc::clone(schema), compiled.clone());
        compiled
    }

    #[cfg(test)]
    fn cached(&self) -> usize {
        self.validators
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entries
            .len()
    }
}

/// A compiled validator, or why the schema cannot be compiled.
type Compiled = std::result::Result<Arc<jsonschema::Validator>, String>;

struct CacheEntry {
    /// The schema it was compiled from (compared on a hit: a hash is not proof).
    schema: Arc<Value>,
    compiled: Compiled,
    used: u64,
}

/// The least-recently-used cache of compiled validators, [`CACHE_CAPACITY`] entries.
#[derive(Default)]
struct Cache {
    entries: HashMap<(String, u64), CacheEntry>,
    clock: u64,
}

impl Cache {
    fn get(&mut self, tool: &str, hash: u64, schema: &Arc<Value>) -> Option<Compiled> {
        self.clock += 1;
        let entry = self.entries.get_mut(&(tool.to_owned(), hash))?;
        if !Arc::ptr_eq(&entry.schema, schema) && *entry.schema != **schema {
            return None;
        }
        entry.used = self.clock;
        Some(entry.compiled.clone())
    }

    fn insert(&mut self, tool: &str, hash: u64, schema: Arc<Value>, compiled: Compiled) {
        self.clock += 1;
        let key = (tool.to_owned(), hash);
        if !self.entries.contains_key(&key) && self.entries.len() >= CACHE_CAPACITY {
            let lru = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone());
            if let Some(lru) = lru {
                self.entries.remove(&lru);
            }
        }
        self.entries.insert(
            key,
            CacheEntry {
                schema,
                compiled,
                used: self.clock,
            },
        );
    }
}

/// Pre-checks `schema` ([`precheck`]), then compiles it without any retrieval: Draft 2020-12
/// when `$schema` is absent, `regex` patterns with bounded sizes.
pub(crate) fn compile(schema: &Value) -> std::result::Result<jsonschema::Validator, String> {
    precheck(schema)?;
    let patterns = jsonschema::PatternOptions::regex()
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT);
    let mut options = jsonschema::options()
        .offline()
        .with_pattern_options(patterns);
    if schema.get("$schema").is_none() {
        options = options.with_draft(jsonschema::Draft::Draft202012);
    }
    options
        .build(schema)
        .map_err(|e| shown(&format!("invalid outputSchema: {e}"), MAX_MESSAGE_CHARS))
}

/// The errors of validating `instance`: at most [`MAX_REPORTED_ERRORS`] lines, then one
/// saying how many more there were; empty when it conforms. Instance values are masked in the
/// messages (they may be large), and everything is escaped and bounded.
fn violations(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    if validator.is_valid(instance) {
        return Vec::new();
    }
    let mut lines = Vec::new();
    let mut total = 0usize;
    for error in validator.iter_errors(instance) {
        total += 1;
        if lines.len() < MAX_REPORTED_ERRORS {
            let path = error.instance_path().as_str();
            let path = if path.is_empty() { "(root)" } else { path };
            lines.push(format!(
                "{}: {}",
                shown(path, MAX_MESSAGE_CHARS),
                shown(&error.masked().to_string(), MAX_MESSAGE_CHARS)
            ));
        }
    }
    if total > MAX_REPORTED_ERRORS {
        lines.push(format!("… and {} more", total - MAX_REPORTED_ERRORS));
    }
    if lines.is_empty() {
        lines.push("(root): does not match the outputSchema".to_owned());
    }
    lines
}

/// Checks, before compiling, that validating against `schema` is bounded and needs nothing
/// from outside it:
///
/// - subschemas nest at most [`MAX_DEPTH`] deep and there are at most [`MAX_SUBSCHEMAS`],
///   both counted with every `$ref` (`$dynamicRef`, `$recursiveRef`) expanded where it is
///   used, so a chain of definitions each referencing the next twice is refused;
/// - every reference resolves inside the schema (a JSON pointer, an `$anchor`, or an `$id` of
///   the schema itself): an `http:`, `https:` or `file:` reference, a relative one to another
///   document, or the URI of a well-known meta-schema, is refused;
/// - a recursion (a reference back to a schema it is inside) is accepted only when each way
///   around it reaches a different place in the value (`left` and `right` of a tree node),
///   so no value can be validated exponentially many times;
/// - at most [`MAX_UNEVALUATED_NESTING`] schemas with `unevaluatedProperties` or
///   `unevaluatedItems` nested in one another (each level can double the work);
/// - at most [`MAX_PATTERNS`] regular expressions.
///
/// It does not check that the schema is valid JSON Schema: compiling does.
pub(crate) fn precheck(schema: &Value) -> std::result::Result<(), String> {
    let mut walk = Walk::new(schema)?;
    walk.schema(schema, ROOT_BASE.to_owned(), 0)
}

/// The base URI of a schema without `$id` (the `jsonschema` crate's default).
const ROOT_BASE: &str = "json-schema:///";

/// Keywords whose values are data, never schemas.
const DATA_KEYWORDS: [&str; 4] = ["enum", "const", "default", "examples"];
/// Keywords whose values are objects of schemas.
const SCHEMA_MAP_KEYWORDS: [&str; 6] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// One step from a value to a part of it, as far as the pre-check can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step<'a> {
    /// The member of this name (`properties`).
    Name(&'a str),
    /// Some part (an item, a member matched by pattern or not named, a property name).
    Any,
}

/// Whether two sequences of steps can reach the same part of a value, one as a prefix of the
/// other (then a recursion through both can reach one part in more than one way).
fn overlap(a: &[Step<'_>], b: &[Step<'_>]) -> bool {
    a.iter().zip(b).all(|(x, y)| match (x, y) {
        (Step::Name(x), Step::Name(y)) => x == y,
        _ => true,
    })
}

/// A schema being walked: where its walk entered, and the recursions back to it found.
struct Frame<'a> {
    node: *const Value,
    at: usize,
    cycles: Vec<Vec<Step<'a>>>,
}

/// The state of [`precheck`].
struct Walk<'a> {
    /// The absolute URI (no fragment) of each schema with an `$id`, by address.
    ids: HashMap<*const Value, String>,
    /// Each resource (the root and every `$id`) by its absolute URI.
    resources: HashMap<String, &'a Value>,
    /// `$anchor`, `$dynamicAnchor` and draft 4–7 `"$id": "#name"`, by (resource URI, name).
    anchors: HashMap<(String, String), &'a Value>,
    /// `$dynamicAnchor`s by name (a `$dynamicRef` may land on any of them).
    dynamic: HashMap<String, Vec<&'a Value>>,
    /// Schemas with `"$recursiveAnchor": true` (a `$recursiveRef` may land on any of them).
    recursive: Vec<&'a Value>,
    patterns: usize,
    subschemas: usize,
    steps: usize,
    /// Schemas with `unevaluated*` on the stack.
    unevaluated: usize,
    stack: Vec<Frame<'a>>,
    path: Vec<Step<'a>>,
}

impl<'a> Walk<'a> {
    fn new(root: &'a Value) -> std::result::Result<Self, String> {
        let mut walk = Walk {
            ids: HashMap::new(),
            resources: HashMap::new(),
            anchors: HashMap::new(),
            dynamic: HashMap::new(),
            recursive: Vec::new(),
            patterns: 0,
            subschemas: 0,
            steps: 0,
            unevaluated: 0,
            stack: Vec::new(),
            path: Vec::new(),
        };
        walk.resources.insert(ROOT_BASE.to_owned(), root);
        walk.index(root, ROOT_BASE, 0, true)?;
        if walk.patterns > MAX_PATTERNS {
            return Err(format!(
                "the outputSchema has {} regular expressions, more than {MAX_PATTERNS}",
                walk.patterns
            ));
        }
        Ok(walk)
    }

    /// Finds the resources and anchors of the document, and counts its patterns.
    fn index(
        &mut self,
        node: &'a Value,
        base: &str,
        depth: usize,
        schema: bool,
    ) -> std::result::Result<(), String> {
        if depth > MAX_DOCUMENT_DEPTH {
            return Err(format!(
                "the outputSchema nests deeper than {MAX_DOCUMENT_DEPTH} levels"
            ));
        }
        match node {
            Value::Array(items) => {
                for item in items {
                    self.index(item, base, depth + 1, schema)?;
                }
                Ok(())
            }
            Value::Object(map) => {
                let mut base = base.to_owned();
                if schema {
                    if let Some(Value::String(id)) = map.get("$id") {
                        if let Some(name) = id.strip_prefix('#') {
                            self.anchors.insert((base.clone(), name.to_owned()), node);
                        } else {
                            let uri = resolve(&base, id)
                                .map(|u| without_fragment(&u).to_owned())
                                .ok_or_else(|| {
                                    format!("invalid $id {}", shown(id, MAX_MESSAGE_CHARS))
                                })?;
                            self.ids.insert(node, uri.clone());
                            self.resources.insert(uri.clone(), node);
                            base = uri;
                        }
                    }
                    for key in ["$anchor", "$dynamicAnchor"] {
                        if let Some(Value::String(name)) = map.get(key) {
                            self.anchors.insert((base.clone(), name.clone()), node);
                            if key == "$dynamicAnchor" {
                                self.dynamic.entry(name.clone()).or_default().push(node);
                            }
                        }
                    }
                    if map.get("$recursiveAnchor") == Some(&Value::Bool(true)) {
                        self.recursive.push(node);
                    }
                    if let Some(Value::String(_)) = map.get("pattern") {
                        self.patterns += 1;
                    }
                    if let Some(Value::Object(p)) = map.get("patternProperties") {
                        self.patterns += p.len();
                    }
                }
                for (key, value) in map {
                    if schema && DATA_KEYWORDS.contains(&key.as_str()) {
                        continue;
                    }
                    if schema
                        && SCHEMA_MAP_KEYWORDS.contains(&key.as_str())
                        && let Value::Object(members) = value
                    {
                        for member in members.values() {
                            self.index(member, &base, depth + 2, true)?;
                        }
                        continue;
                    }
                    self.index(value, &base, depth + 1, true)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn step(&mut self) -> std::result::Result<(), String> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(format!(
                "the outputSchema is too large to check (more than {MAX_STEPS} keywords with \
                 every $ref expanded)"
            ));
        }
        Ok(())
    }

    /// Walks the schema `node` whose base URI is `base` (unless it has an `$id`), `depth`
    /// schemas deep.
    fn schema(
        &mut self,
        node: &'a Value,
        base: String,
        depth: usize,
    ) -> std::result::Result<(), String> {
        self.step()?;
        let map = match node {
            Value::Bool(_) => return self.count(),
            Value::Object(map) => map,
            // Not a schema: compiling says so.
            _ => return Ok(()),
        };
        self.count()?;
        if depth >= MAX_DEPTH {
            return Err(format!(
                "the outputSchema nests subschemas deeper than {MAX_DEPTH} (with every $ref \
                 expanded)"
            ));
        }
        let unevaluated = ["unevaluatedProperties", "unevaluatedItems"]
            .iter()
            .any(|k| map.contains_key(*k));
        if unevaluated {
            self.unevaluated += 1;
            if self.unevaluated > MAX_UNEVALUATED_NESTING {
                return Err(format!(
                    "the outputSchema nests unevaluatedProperties/unevaluatedItems more than \
                     {MAX_UNEVALUATED_NESTING} deep (validation could take exponential time)"
                ));
            }
        }
        let base = self
            .ids
            .get(&(node as *const Value))
            .cloned()
            .unwrap_or(base);
        self.stack.push(Frame {
            node,
            at: self.path.len(),
            cycles: Vec::new(),
        });
        let walked = self.keywords(map, &base, depth + 1);
        self.stack.pop();
        if unevaluated {
            self.unevaluated -= 1;
        }
        walked
    }

    fn count(&mut self) -> std::result::Result<(), String> {
        self.subschemas += 1;
        if self.subschemas > MAX_SUBSCHEMAS {
            return Err(format!(
                "the outputSchema has more than {MAX_SUBSCHEMAS} subschemas (with every $ref \
                 expanded)"
            ));
        }
        Ok(())
    }

    /// Walks `sub` reached by `step` (`None`: the same place in the value).
    fn sub(
        &mut self,
        sub: &'a Value,
        step: Option<Step<'a>>,
        base: &str,
        depth: usize,
    ) -> std::result::Result<(), String> {
        if let Some(step) = step {
            self.path.push(step);
        }
        let walked = self.schema(sub, base.to_owned(), depth);
        if step.is_some() {
            self.path.pop();
        }
        walked
    }

    fn keywords(
        &mut self,
        map: &'a serde_json::Map<String, Value>,
        base: &str,
        depth: usize,
    ) -> std::result::Result<(), String> {
        let any = Some(Step::Any);
        for (key, value) in map {
            self.step()?;
            match (key.as_str(), value) {
                ("$ref", Value::String(r)) => self.reference(r, base, depth, &[])?,
                ("$dynamicRef", Value::String(r)) => {
                    let name = r.rsplit_once('#').map_or("", |(_, n)| n);
                    let extra = self.dynamic.get(name).cloned().unwrap_or_default();
                    self.reference(r, base, depth, &extra)?;
                }
                ("$recursiveRef", Value::String(r)) => {
                    let extra = self.recursive.clone();
                    self.reference(r, base, depth, &extra)?;
                }
                ("properties", Value::Object(members)) => {
                    for (name, s) in members {
                        self.sub(s, Some(Step::Name(name)), base, depth)?;
                    }
                }
                ("patternProperties", Value::Object(members)) => {
                    for s in members.values() {
                        self.sub(s, any, base, depth)?;
                    }
                }
                ("dependentSchemas" | "dependencies", Value::Object(members)) => {
                    for s in members.values() {
                        self.sub(s, None, base, depth)?;
                    }
                }
                ("allOf" | "anyOf" | "oneOf", Value::Array(items)) => {
                    for s in items {
                        self.sub(s, None, base, depth)?;
                    }
                }
                ("not" | "if" | "then" | "else", s) => self.sub(s, None, base, depth)?,
                ("items" | "prefixItems", Value::Array(items)) => {
                    for s in items {
                        self.sub(s, any, base, depth)?;
                    }
                }
                (
                    "items"
                    | "additionalItems"
                    | "unevaluatedItems"
                    | "contains"
                    | "additionalProperties"
                    | "unevaluatedProperties"
                    | "propertyNames"
                    | "contentSchema",
                    s,
                ) => self.sub(s, any, base, depth)?,
                // `$defs` are walked where they are referenced; other keywords hold no
                // schema that is applied.
                _ => {}
            }
        }
        Ok(())
    }

    /// Follows the reference `r` (and, for a dynamic one, `extra` targets).
    fn reference(
        &mut self,
        r: &str,
        base: &str,
        depth: usize,
        extra: &[&'a Value],
    ) -> std::result::Result<(), String> {
        let (target, target_base) = self.resolve_ref(r, base).ok_or_else(|| {
            format!(
                "$ref {} does not resolve inside the outputSchema (references are never \
                 fetched)",
                shown(r, MAX_MESSAGE_CHARS)
            )
        })?;
        let mut targets = vec![(target, target_base)];
        for node in extra {
            if !targets.iter().any(|(t, _)| std::ptr::eq(*t, *node)) {
                let node_base = self.ids.get(&(*node as *const Value)).cloned();
                targets.push((node, node_base.unwrap_or_else(|| base.to_owned())));
            }
        }
        for (target, target_base) in targets {
            let on_stack = self.stack.iter().position(|f| std::ptr::eq(f.node, target));
            match on_stack {
                Some(i) => {
                    // A recursion: the way around it is the path since that schema.
                    let way = self.path[self.stack[i].at..].to_vec();
                    let frame = &mut self.stack[i];
                    if frame.cycles.iter().any(|other| overlap(other, &way)) {
                        return Err(format!(
                            "the outputSchema recurses through {} in two ways that reach the \
                             same place (validation could take exponential time)",
                            shown(r, MAX_MESSAGE_CHARS)
                        ));
                    }
                    frame.cycles.push(way);
                }
                None => self.schema(target, target_base, depth)?,
            }
        }
        Ok(())
    }

    /// The schema `r` points to from `base`, and its base URI (`None`: not in the document).
    fn resolve_ref(&self, r: &str, base: &str) -> Option<(&'a Value, String)> {
        let uri = resolve(base, r)?;
        let (doc, fragment) = uri.split_once('#').unwrap_or((uri.as_str(), ""));
        let resource = *self.resources.get(doc)?;
        let fragment = percent_decode(fragment)?;
        if fragment.is_empty() {
            return Some((resource, doc.to_owned()));
        }
        if !fragment.starts_with('/') {
            let node = *self.anchors.get(&(doc.to_owned(), fragment))?;
            return Some((node, doc.to_owned()));
        }
        // A JSON pointer: `$id`s on the way change the base (not the target's own).
        let mut node = resource;
        let mut node_base = doc.to_owned();
        for token in fragment[1..].split('/') {
            if let Some(id) = self.ids.get(&(node as *const Value)) {
                node_base = id.clone();
            }
            let token = token.replace("~1", "/").replace("~0", "~");
            node = match node {
                Value::Object(map) => map.get(&token)?,
                Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
                _ => return None,
            };
        }
        Some((node, node_base))
    }
}

/// `reference` resolved against `base` (RFC 3986), as the `jsonschema` crate does.
fn resolve(base: &str, reference: &str) -> Option<String> {
    let base = jsonschema::Uri::<&str>::parse(base).ok()?;
    jsonschema::uri::resolve_against(&base, reference)
        .ok()
        .map(|u| u.as_str().to_owned())
}

fn without_fragment(uri: &str) -> &str {
    uri.split_once('#').map_or(uri, |(doc, _)| doc)
}

/// A URI fragment with its `%XX` escapes decoded (`None`: not UTF-8 once decoded).
fn percent_decode(fragment: &str) -> Option<String> {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(b) = u8::from_str_radix(fragment.get(i + 1..i + 3)?, 16)
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Tool;
    use serde_json::json;

    fn tool(name: &str, output: Option<Value>) -> Tool {
        let mut t = json!({"name": name, "inputSchema": {"type": "object"}});
        if let Some(o) = output {
            t["outputSchema"] = o;
        }
        serde_json::from_value(t).unwrap()
    }

    fn result(structured: Option<Value>, is_error: Option<bool>) -> CallToolResult {
        let mut r = json!({"content": [{"type": "text", "text": "x"}]});
        if let Some(s) = structured {
            r["structuredContent"] = s;
        }
        if let Some(e) = is_error {
            r["isError"] = json!(e);
        }
        serde_json::from_value(r).unwrap()
    }

    fn counter() -> Value {
        json!({
            "type": "object",
            "properties": {"count": {"type": "integer", "minimum": 0}, "label": {"type": "string"}},
            "required": ["count", "label"],
            "additionalProperties": false
        })
    }

    impl OutputSchemas {
        /// Records a listing in the catalog as the client does (its output schemas, when
        /// checking is on).
        fn record(&self, tools: &[Tool]) {
            let keep = crate::tool_catalog::Keep {
                headers: false,
                outputs: self.enabled,
            };
            let listed = tools.iter().map(crate::tool_catalog::Listed::from);
            self.catalog.record(listed, keep);
        }
    }

    fn with(name: &str, schema: Value) -> OutputSchemas {
        let s = OutputSchemas::new(true, ToolCatalog::new());
        s.record(&[tool(name, Some(schema))]);
        s
    }

    fn invalid_reason(v: Verdict) -> String {
        match v {
            Verdict::InvalidSchema(reason) => reason,
            other => panic!("not an invalid schema: {other:?}"),
        }
    }

    #[test]
    fn a_conforming_result_passes_and_its_validator_is_cached() {
        let s = with("count", counter());
        let ok = result(Some(json!({"count": 3, "label": "x"})), None);
        assert_eq!(s.verdict("count", &ok), Verdict::Conforms);
        assert_eq!(s.verdict("count", &ok), Verdict::Conforms);
        assert_eq!(s.cached(), 1);
        assert_eq!(s.check("count", ok.clone()).unwrap(), ok);
    }

    #[test]
    fn a_mismatch_names_each_place_and_keeps_the_result() {
        let s = with("count", counter());
        let bad = result(Some(json!({"count": "three", "extra": 1})), None);
        let Verdict::Mismatch(errors) = s.verdict("count", &bad) else {
            panic!("no mismatch")
        };
        assert!(
            errors.iter().any(|e| e.starts_with("/count: ")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("(root): ") && e.contains("label")),
            "{errors:?}"
        );
        // Instance values are masked: the string the server sent is not repeated.
        assert!(errors.iter().all(|e| !e.contains("three")), "{errors:?}");
        match s.check("count", bad.clone()) {
            Err(Error::OutputSchemaMismatch {
                tool,
                errors: e,
                result,
            }) => {
                assert_eq!(tool, "count");
                assert_eq!(e, errors);
                assert_eq!(*result, bad);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_missing_structured_content_is_a_mismatch_but_a_tool_error_is_not_checked() {
        let s = with("count", counter());
        let Verdict::Mismatch(errors) = s.verdict("count", &result(None, None)) else {
            panic!("no mismatch")
        };
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].contains("structuredContent is missing"),
            "{errors:?}"
        );
        assert!(matches!(
            s.verdict("count", &result(None, Some(false))),
            Verdict::Mismatch(_)
        ));
        // isError: true is never checked, with or without structuredContent.
        for structured in [None, Some(json!({"count": "no"}))] {
            assert_eq!(
                s.verdict("count", &result(structured, Some(true))),
                Verdict::Unchecked
            );
        }
    }

    #[test]
    fn unlisted_tools_and_tools_without_schema_are_not_checked_and_off_checks_nothing() {
        let s = with("count", counter());
        let bad = result(Some(json!(42)), None);
        assert_eq!(s.verdict("other", &bad), Verdict::Unchecked);
        s.record(&[tool("plain", None)]);
        assert_eq!(s.verdict("plain", &bad), Verdict::Unchecked);
        let off = OutputSchemas::new(false, ToolCatalog::new());
        off.record(&[tool("count", Some(counter()))]);
        assert_eq!(off.verdict("count", &bad), Verdict::Unchecked);
        assert_eq!(
            off.verdict("count", &result(None, None)),
            Verdict::Unchecked
        );
    }

    #[test]
    fn the_latest_listing_wins() {
        let s = with("t", json!({"type": "object", "required": ["a"]}));
        let b = result(Some(json!({"b": 1})), None);
        assert!(matches!(s.verdict("t", &b), Verdict::Mismatch(_)));
        s.record(&[tool(
            "t",
            Some(json!({"type": "object", "required": ["b"]})),
        )]);
        assert_eq!(s.verdict("t", &b), Verdict::Conforms);
        // Listed again without an outputSchema: no longer checked.
        s.record(&[tool("t", None)]);
        assert_eq!(s.verdict("t", &result(None, None)), Verdict::Unchecked);
    }

    #[test]
    fn network_and_file_refs_are_rejected_without_any_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}/schema.json");
        let schemas = [
            json!({"$ref": url}),
            json!({"type": "object", "properties": {"p": {"$ref": format!("{url}#/defs/x")}}}),
            json!({"type": "object", "properties": {"p": {"$ref": format!("https://127.0.0.1:{port}/s")}}}),
            json!({"$ref": "file:///etc/passwd"}),
            json!({"$ref": "other.json"}),
            json!({"$id": format!("http://127.0.0.1:{port}/root.json"), "$ref": "sibling.json"}),
            json!({"$ref": "#/$defs/missing"}),
        ];
        for schema in schemas {
            let s = with("t", schema.clone());
            let reason = invalid_reason(s.verdict("t", &result(Some(json!({})), None)));
            assert!(reason.contains("does not resolve"), "{schema}: {reason}");
            // The compiler refuses them by itself too (offline, no retrieval code).
            let built = jsonschema::options()
                .offline()
                .with_draft(jsonschema::Draft::Draft202012)
                .build(&schema);
            assert!(built.is_err(), "{schema}");
        }
        // A meta-schema the crate has built in is not inside the schema either: refused by
        // the pre-check (the crate would use its own copy, fetching nothing).
        let s = with(
            "t",
            json!({"$ref": "https://json-schema.org/draft/2020-12/schema"}),
        );
        let reason = invalid_reason(s.verdict("t", &result(Some(json!({})), None)));
        assert!(reason.contains("does not resolve"), "{reason}");
        // A `$schema` naming an unknown meta-schema there is not fetched either.
        let s = with("t", json!({"$schema": url, "type": "object"}));
        invalid_reason(s.verdict("t", &result(Some(json!({})), None)));
        match listener.accept() {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            other => panic!("a connection was made: {other:?}"),
        }
    }

    #[test]
    fn refs_inside_the_schema_resolve() {
        let schemas = [
            json!({"$defs": {"n": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/n"}}}),
            json!({"definitions": {"a b": {"type": "integer"}},
                   "properties": {"a": {"$ref": "#/definitions/a%20b"}}}),
            json!({"$defs": {"n": {"$anchor": "num", "type": "integer"}},
                   "properties": {"a": {"$ref": "#num"}}}),
            json!({"$id": "https://example.com/root.json",
                   "$defs": {"n": {"$id": "num.json", "type": "integer"}},
                   "properties": {"a": {"$ref": "num.json"}}}),
            json!({"$id": "urn:example:root",
                   "$defs": {"n": {"$id": "urn:example:num", "type": "integer"}},
                   "properties": {"a": {"$ref": "urn:example:num"}}}),
        ];
        for schema in schemas {
            let s = with("t", schema.clone());
            assert_eq!(
                s.verdict("t", &result(Some(json!({"a": 1})), None)),
                Verdict::Conforms,
                "{schema}"
            );
            assert!(
                matches!(
                    s.verdict("t", &result(Some(json!({"a": "x"})), None)),
                    Verdict::Mismatch(_)
                ),
                "{schema}"
            );
        }
    }

    #[test]
    fn draft_2020_12_by_default_and_the_declared_draft_otherwise() {
        // 2020-12: `prefixItems`; `items` applies after them.
        let s = with(
            "t",
            json!({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}),
        );
        assert_eq!(
            s.verdict("t", &result(Some(json!([1, "a"])), None)),
            Verdict::Conforms
        );
        assert!(matches!(
            s.verdict("t", &result(Some(json!([1, 2])), None)),
            Verdict::Mismatch(_)
        ));
        // Draft 7 declared: an array of `items` is a tuple.
        let s = with(
            "t",
            json!({"$schema": "http://json-schema.org/draft-07/schema#",
                   "items": [{"type": "integer"}], "additionalItems": false}),
        );
        assert_eq!(
            s.verdict("t", &result(Some(json!([1])), None)),
            Verdict::Conforms
        );
        assert!(matches!(
            s.verdict("t", &result(Some(json!([1, 2])), None)),
            Verdict::Mismatch(_)
        ));
    }

    #[test]
    fn an_invalid_schema_is_rejected_not_permissive() {
        for schema in [
            json!({"type": 5}),
            json!("a string"),
            json!({"pattern": "(unclosed"}),
            json!({"properties": {"a": {"minimum": "zero"}}}),
        ] {
            let s = with("t", schema.clone());
            let reason = invalid_reason(s.verdict("t", &result(Some(json!({"a": 1})), None)));
            assert!(
                reason.starts_with("invalid outputSchema"),
                "{schema}: {reason}"
            );
            assert!(matches!(
                s.check("t", result(Some(json!({})), None)),
                Err(Error::InvalidOutputSchema { .. })
            ));
        }
    }

    fn nested(levels: usize) -> Value {
        let mut schema = json!({"type": "integer"});
        for _ in 0..levels {
            schema = json!({"type": "object", "properties": {"a": schema}});
        }
        schema
    }

    #[test]
    fn depth_and_size_bombs_are_rejected_before_compiling() {
        assert!(precheck(&nested(MAX_DEPTH - 1)).is_ok());
        let reason = precheck(&nested(MAX_DEPTH)).unwrap_err();
        assert!(reason.contains("deeper than 64"), "{reason}");
        let s = with("t", nested(500));
        let reason = invalid_reason(s.verdict("t", &result(Some(json!({})), None)));
        assert!(reason.contains("deeper"), "{reason}");
        // Wide: more subschemas than the bound.
        let props: serde_json::Map<String, Value> = (0..MAX_SUBSCHEMAS + 1)
            .map(|i| (format!("p{i}"), json!({"type": "integer"})))
            .collect();
        let reason = precheck(&json!({"properties": props})).unwrap_err();
        assert!(reason.contains("more than 10000 subschemas"), "{reason}");
        // A chain of definitions each referencing the next twice: 2^40 expanded, and
        // validating a wrong value would take as long. Refused at once.
        let mut defs = serde_json::Map::new();
        for i in 0..40 {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(
                format!("d{i}"),
                json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
            );
        }
        defs.insert("d40".into(), json!({"type": "string"}));
        let bomb = json!({"$defs": defs, "$ref": "#/$defs/d0"});
        let started = std::time::Instant::now();
        let s = with("t", bomb);
        invalid_reason(s.verdict("t", &result(Some(json!(1)), None)));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // `unevaluatedProperties` under `anyOf`, nested: each level doubles the work.
        let mut nested_unevaluated = json!({"properties": {"a": {"type": "integer"}}});
        for _ in 0..40 {
            nested_unevaluated = json!({
                "anyOf": [nested_unevaluated, {"properties": {"b": {"type": "string"}}}],
                "unevaluatedProperties": false
            });
        }
        let started = std::time::Instant::now();
        let s = with("t", nested_unevaluated);
        let reason = invalid_reason(s.verdict("t", &result(Some(json!({"a": "x", "c": 1})), None)));
        assert!(reason.contains("unevaluatedProperties"), "{reason}");
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
        // A few levels are fine.
        let mut few = json!({"properties": {"a": {"type": "integer"}}});
        for _ in 0..MAX_UNEVALUATED_NESTING {
            few = json!({"anyOf": [few, {"properties": {"b": {"type": "string"}}}],
                         "unevaluatedProperties": false});
        }
        assert!(precheck(&few).is_ok());
        // Too many regular expressions.
        let props: serde_json::Map<String, Value> = (0..=MAX_PATTERNS)
            .map(|i| (format!("p{i}"), json!({"pattern": "^a"})))
            .collect();
        let reason = precheck(&json!({"properties": props})).unwrap_err();
        assert!(reason.contains("regular expressions"), "{reason}");
    }

    #[test]
    fn recursion_is_accepted_when_each_way_reaches_a_different_place() {
        // A binary tree (as pydantic writes an optional recursive field) and a list of
        // children: linear to validate.
        let tree = json!({
            "$ref": "#/$defs/Node",
            "$defs": {"Node": {"type": "object", "properties": {
                "value": {"type": "integer"},
                "left": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
                "right": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }}}
        });
        let s = with("t", tree);
        let value = json!({"value": 1, "left": {"value": 2, "right": null},
                           "children": [{"value": 3}]});
        assert_eq!(
            s.verdict("t", &result(Some(value), None)),
            Verdict::Conforms
        );
        let bad = json!({"value": 1, "left": {"value": "two"}});
        let Verdict::Mismatch(errors) = s.verdict("t", &result(Some(bad), None)) else {
            panic!("no mismatch")
        };
        assert!(errors.iter().any(|e| e.starts_with("/left")), "{errors:?}");
        // Two ways around the same recursion to the same place: exponential, refused.
        for schema in [
            json!({"anyOf": [{"properties": {"x": {"$ref": "#"}}}, {"properties": {"x": {"$ref": "#"}}}]}),
            json!({"items": {"$ref": "#"}, "contains": {"$ref": "#"}}),
            json!({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}},
                   "$ref": "#/$defs/a"}),
            // A shorter way and a longer one through the same member.
            json!({"properties": {"x": {"anyOf": [{"$ref": "#"},
                   {"properties": {"x": {"$ref": "#"}}}]}}}),
        ] {
            let reason = precheck(&schema).unwrap_err();
            assert!(reason.contains("two ways"), "{schema}: {reason}");
        }
    }

    #[test]
    fn server_text_in_errors_is_escaped_and_bounded() {
        let evil = format!("\u{1b}]0;pwned\u{7}{}", "x".repeat(5000));
        let mut props = serde_json::Map::new();
        props.insert(evil.clone(), json!({"type": "integer"}));
        let s = with(
            "t",
            json!({"type": "object", "properties": props, "required": [evil.clone()]}),
        );
        let mut wrong = serde_json::Map::new();
        wrong.insert(evil.clone(), json!("s"));
        let Verdict::Mismatch(errors) = s.verdict("t", &result(Some(Value::Object(wrong)), None))
        else {
            panic!("no mismatch")
        };
        for e in &errors {
            assert!(!e.chars().any(char::is_control), "{e:?}");
            assert!(e.chars().count() <= 2 * MAX_MESSAGE_CHARS + 2, "{e}");
        }
        // Many errors: 16 lines, then how many more.
        let s = with("t", json!({"type": "array", "items": {"type": "integer"}}));
        let many = json!((0..100).map(|i| i.to_string()).collect::<Vec<_>>());
        let Verdict::Mismatch(errors) = s.verdict("t", &result(Some(many), None)) else {
            panic!("no mismatch")
        };
        assert_eq!(errors.len(), MAX_REPORTED_ERRORS + 1);
        assert_eq!(errors.last().unwrap(), "… and 84 more");
        let e = Error::OutputSchemaMismatch {
            tool: format!("bad\u{1b}[2J{}", "n".repeat(1000)),
            errors,
            result: Box::new(result(None, None)),
        };
        let line = e.to_string();
        assert!(!line.chars().any(char::is_control), "{line}");
        assert!(
            line.contains("(and 100 more)") || line.contains("(and 99 more)"),
            "{line}"
        );
        assert!(line.chars().count() < 600, "{line}");
    }

    #[test]
    fn an_oversized_schema_fails_its_results() {
        let big = json!({"description": "d".repeat(MAX_SCHEMA_BYTES), "type": "object"});
        let s = with("t", big);
        let reason = invalid_reason(s.verdict("t", &result(Some(json!({})), None)));
        assert!(reason.contains("bytes"), "{reason}");
    }

    #[test]
    fn the_validator_cache_is_bounded() {
        let s = OutputSchemas::new(true, ToolCatalog::new());
        let tools: Vec<Tool> = (0..CACHE_CAPACITY + 40)
            .map(|i| {
                tool(
                    &format!("t{i}"),
                    Some(json!({"type": "object", "minProperties": i % 3})),
                )
            })
            .collect();
        s.record(&tools);
        let ok = result(Some(json!({"a": 1, "b": 2, "c": 3})), None);
        for t in &tools {
            assert_eq!(s.verdict(&t.name, &ok), Verdict::Conforms);
        }
        assert_eq!(s.cached(), CACHE_CAPACITY);
        // The most recently used stays; an evicted one is compiled again.
        assert_eq!(s.verdict("t0", &ok), Verdict::Conforms);
        assert_eq!(s.cached(), CACHE_CAPACITY);
        // The schemas themselves are bounded by the catalog (see its tests).
    }

    #[test]
    fn a_hash_collision_does_not_reuse_another_schema() {
        let s = OutputSchemas::new(true, ToolCatalog::new());
        let a = Arc::new(json!({"type": "integer"}));
        let b = Arc::new(json!({"type": "string"}));
        let va = s.validator("t", 1, &a).unwrap();
        let vb = s.validator("t", 1, &b).unwrap();
        assert!(va.is_valid(&json!(1)) && !vb.is_valid(&json!(1)));
    }
}
