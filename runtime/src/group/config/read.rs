//! Reading a configuration file with serde: visitors over the JSON that build the entries as
//! written (before `${VAR}` expansion), refusing what cannot be used with an error raised
//! through [`de::Error::custom`] so that serde_json attaches the line and column where reading
//! stopped (just after the offending value).
//!
//! serde_json's error carries only a message and a position, so the visitors also note, in a
//! [`Reader`] beside them, which server and field they were reading and, for their own errors,
//! the reason; [`read`] joins the two into a [`ConfigError`]. No message is made from a value
//! of the file (a header's or a variable's value may be a secret): type errors say what kind
//! of value was found, never which.

use std::cell::RefCell;
use std::collections::HashSet;
use std::fmt;
use std::time::Duration;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::{
    ConfigError, ConfigWarning, MAX_TIMEOUT, OAuthSettings, ServerEntry, ServerTransport,
    ToolFilter,
};
use crate::EraMode;
use crate::auth::Secret;

/// What [`read`] found: the entries as written, in the file's order.
pub(super) struct Parsed {
    pub servers: Vec<ServerEntry>,
    pub inputs: Option<Value>,
    pub warnings: Vec<ConfigWarning>,
}

/// Where reading is, and the warnings so far.
struct Reader {
    file: String,
    spot: RefCell<Spot>,
    warnings: RefCell<Vec<ConfigWarning>>,
}

/// The server and field being read, and the reason of an error raised by a visitor.
#[derive(Default)]
struct Spot {
    server: Option<String>,
    field: Option<String>,
    reason: Option<String>,
}

impl Reader {
    /// An error of the field `field` (of the server being read) for `reason`.
    fn fail<E: de::Error>(&self, field: Option<String>, reason: String) -> E {
        let mut spot = self.spot.borrow_mut();
        if field.is_some() {
            spot.field = field;
        }
        let error = E::custom(&reason);
        spot.reason = Some(reason);
        error
    }

    fn set_field(&self, field: Option<String>) {
        self.spot.borrow_mut().field = field;
    }

    fn server(&self) -> String {
        self.spot.borrow().server.clone().unwrap_or_default()
    }

    fn unknown(&self, field: String) {
        let warning = ConfigWarning::UnknownField {
            file: self.file.clone(),
            server: self.server(),
            field,
        };
        self.warnings.borrow_mut().push(warning);
    }

    fn ignored(&self, field: String, reason: &'static str) {
        let warning = ConfigWarning::IgnoredField {
            file: self.file.clone(),
            server: self.server(),
            field,
            reason,
        };
        self.warnings.borrow_mut().push(warning);
    }
}

/// Reads the configuration in `bytes`, labelled `file` in errors and warnings.
pub(super) fn read(bytes: &[u8], file: &str) -> Result<Parsed, ConfigError> {
    let reader = Reader {
        file: file.to_owned(),
        spot: RefCell::default(),
        warnings: RefCell::default(),
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result = Seed(FileVisitor { reader: &reader })
        .deserialize(&mut de)
        .and_then(|parsed| de.end().map(|()| parsed));
    let Reader { spot, warnings, .. } = reader;
    match result {
        Ok((servers, inputs, found)) => {
            if !found {
                return Err(ConfigError::NoServers { file: file.into() });
            }
            Ok(Parsed {
                servers,
                inputs,
                warnings: warnings.into_inner(),
            })
        }
        Err(cause) => {
            let Spot {
                server,
                field,
                reason,
            } = spot.into_inner();
            let (line, column) = (cause.line(), cause.column());
            Err(match (cause.classify(), reason) {
                (serde_json::error::Category::Data, Some(reason)) => ConfigError::Invalid {
                    file: file.into(),
                    line,
                    column,
                    server,
                    field,
                    reason,
                },
                _ => ConfigError::Syntax {
                    file: file.into(),
                    line,
                    column,
                    server,
                    field,
                    cause,
                },
            })
        }
    }
}

/// A visitor used as a seed: `deserialize_any` with it.
struct Seed<V>(V);

impl<'de, V: Visitor<'de>> DeserializeSeed<'de> for Seed<V> {
    type Value = V::Value;

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        deserializer.deserialize_any(self.0)
    }
}

/// A visitor of one shape of JSON value, refusing the others without showing them.
trait Shaped {
    fn reader(&self) -> &Reader;
    /// The field the value is (`None`: the one noted in the reader).
    fn label(&self) -> Option<String>;
    /// The shape wanted, for the message ("an object").
    fn wanted(&self) -> &'static str;

    fn refuse<E: de::Error>(&self, found: &str) -> E {
        self.reader().fail(
            self.label(),
            format!("must be {}, not {found}", self.wanted()),
        )
    }
}

/// The `visit_*` methods of every shape but a map and an array, refusing them.
macro_rules! refuse_scalars {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Err(self.refuse("a boolean"))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Err(self.refuse("a number"))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Err(self.refuse("a number"))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Err(self.refuse("a number"))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Err(self.refuse("a string"))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Err(self.refuse("null"))
        }
    };
}

/// [`refuse_scalars`] and arrays: for visitors of a map.
macro_rules! map_only {
    () => {
        refuse_scalars!();
        fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<Self::Value, A::Error> {
            Err(self.refuse("an array"))
        }
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object")
        }
    };
}

/// What kind of value `v` is, for messages (never the value itself).
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// At most 40 characters of a value that is not a secret (a `type`, an `era`), for messages.
fn shown(text: &str) -> String {
    let mut out: String = text.chars().filter(|c| !c.is_control()).take(40).collect();
    if text.chars().count() > 40 {
        out.push('…');
    }
    out
}

/// The whole file: `{"mcpServers": {…}, "servers": {…}, "inputs": […], …}`. Yields the servers
/// of both objects in the file's order, VS Code's `inputs`, and whether either object was there.
struct FileVisitor<'r> {
    reader: &'r Reader,
}

impl Shaped for FileVisitor<'_> {
    fn reader(&self) -> &Reader {
        self.reader
    }
    fn label(&self) -> Option<String> {
        None
    }
    fn wanted(&self) -> &'static str {
        "a JSON object (with `mcpServers` or `servers`)"
    }
}

impl<'de> Visitor<'de> for FileVisitor<'_> {
    type Value = (Vec<ServerEntry>, Option<Value>, bool);

    map_only!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut servers = Vec::new();
        let mut inputs = None;
        let mut seen: Vec<&'static str> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let key: &'static str = match key.as_str() {
                "mcpServers" => "mcpServers",
                "servers" => "servers",
                "inputs" => {
                    inputs = Some(map.next_value::<Value>()?);
                    continue;
                }
                _ => {
                    // The rest of a host's settings (`~/.claude.json` holds much more).
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            if seen.contains(&key) {
                return Err(self
                    .reader
                    .fail(Some(key.into()), format!("`{key}` is given twice")));
            }
            seen.push(key);
            map.next_value_seed(Seed(ServersVisitor {
                reader: self.reader,
                key,
                other: if key == "servers" {
                    "mcpServers"
                } else {
                    "servers"
                },
                out: &mut servers,
            }))?;
        }
        Ok((servers, inputs, !seen.is_empty()))
    }
}

/// One `mcpServers` (or `servers`) object: `{NAME: ENTRY, …}`, appended to `out`.
struct ServersVisitor<'r, 'o> {
    reader: &'r Reader,
    key: &'static str,
    other: &'static str,
    out: &'o mut Vec<ServerEntry>,
}

impl Shaped for ServersVisitor<'_, '_> {
    fn reader(&self) -> &Reader {
        self.reader
    }
    fn label(&self) -> Option<String> {
        Some(self.key.into())
    }
    fn wanted(&self) -> &'static str {
        "an object of servers by name"
    }
}

impl<'de> Visitor<'de> for ServersVisitor<'_, '_> {
    type Value = ();

    map_only!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let first = self.out.len();
        while let Some(name) = map.next_key::<String>()? {
            if name.is_empty() {
                return Err(self
                    .reader
                    .fail(Some(self.key.into()), "a server name is empty".into()));
            }
            if let Some(at) = self.out.iter().position(|e| e.name == name) {
                self.reader.spot.borrow_mut().server = Some(name.clone());
                let reason = if at >= first {
                    format!("server `{name}` is given twice in `{}`", self.key)
                } else {
                    format!(
                        "server `{name}` is in both `{}` and `{}`",
                        self.other, self.key
                    )
                };
                return Err(self.reader.fail(Some(self.key.into()), reason));
            }
            {
                let mut spot = self.reader.spot.borrow_mut();
                spot.server = Some(name.clone());
                spot.field = None;
            }
            let entry = map.next_value_seed(Seed(EntryVisitor {
                reader: self.reader,
                name,
            }))?;
            self.out.push(entry);
            let mut spot = self.reader.spot.borrow_mut();
            spot.server = None;
            spot.field = None;
        }
        Ok(())
    }
}

/// The fields of one entry as read, before they are checked together.
#[derive(Default)]
struct Fields {
    kind: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<Vec<(String, Secret)>>,
    cwd: Option<String>,
    /// The URL and the key it was given under (`url`, `httpUrl`, `serverUrl`).
    url: Option<(&'static str, String)>,
    headers: Option<Vec<(String, Secret)>>,
    timeout: Option<Duration>,
    enabled: Option<bool>,
    disabled: Option<bool>,
    era: Option<EraMode>,
    allow: Option<Vec<String>>,
    deny: Vec<String>,
    oauth: Option<OAuthSettings>,
    extra: Map<String, Value>,
}

/// One server's entry.
struct EntryVisitor<'r> {
    reader: &'r Reader,
    name: String,
}

impl Shaped for EntryVisitor<'_> {
    fn reader(&self) -> &Reader {
        self.reader
    }
    fn label(&self) -> Option<String> {
        None
    }
    fn wanted(&self) -> &'static str {
        "an object (`command` … or `url` …)"
    }
}

impl<'de> Visitor<'de> for EntryVisitor<'_> {
    type Value = ServerEntry;

    map_only!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ServerEntry, A::Error> {
        let r = self.reader;
        let mut f = Fields::default();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                return Err(r.fail(Some(key.clone()), format!("`{key}` is given twice")));
            }
            r.set_field(Some(key.clone()));
            match key.as_str() {
                "type" => f.kind = Some(string(r, "type", map.next_value()?)?),
                "command" => {
                    let command = string(r, "command", map.next_value()?)?;
                    if command.is_empty() {
                        return Err(r.fail(None, "must not be empty".into()));
                    }
                    f.command = Some(command);
                }
                "args" => f.args = Some(map.next_value_seed(Seed(list(r, "args")))?),
                "env" => f.env = Some(map.next_value_seed(Seed(StringMap::env(r)))?),
                "cwd" => f.cwd = Some(string(r, "cwd", map.next_value()?)?),
                "url" | "httpUrl" | "serverUrl" => {
                    let given: &'static str = match key.as_str() {
                        "url" => "url",
                        "httpUrl" => "httpUrl",
                        _ => "serverUrl",
                    };
                    if let Some((earlier, _)) = f.url {
                        return Err(r.fail(
                            None,
                            format!("both `{earlier}` and `{given}`: give one URL"),
                        ));
                    }
                    let url = string(r, given, map.next_value()?)?;
                    if url.is_empty() {
                        return Err(r.fail(None, "must not be empty".into()));
                    }
                    f.url = Some((given, url));
                }
                "headers" => f.headers = Some(map.next_value_seed(Seed(StringMap::headers(r)))?),
                "timeout" => {
                    let value: Value = map.next_value()?;
                    let number = value.is_number();
                    let timeout = timeout(r, value)?;
                    if number && timeout < Duration::from_secs(1) {
                        let warning = ConfigWarning::ShortTimeout {
                            file: r.file.clone(),
                            server: r.server(),
                            timeout,
                        };
                        r.warnings.borrow_mut().push(warning);
                    }
                    f.timeout = Some(timeout);
                }
                "enabled" => f.enabled = Some(boolean(r, "enabled", map.next_value()?)?),
                "disabled" => f.disabled = Some(boolean(r, "disabled", map.next_value()?)?),
                "era" => f.era = Some(era(r, map.next_value()?)?),
                "tools" => {
                    let (allow, deny) = map.next_value_seed(Seed(ToolsVisitor { reader: r }))?;
                    extend_allow(&mut f.allow, allow);
                    f.deny.extend(deny);
                }
                // Gemini CLI's names for the same lists.
                "includeTools" => {
                    let allow = map.next_value_seed(Seed(list(r, "includeTools")))?;
                    extend_allow(&mut f.allow, Some(allow));
                }
                "excludeTools" => f
                    .deny
                    .extend(map.next_value_seed(Seed(list(r, "excludeTools")))?),
                "oauth" => f.oauth = Some(map.next_value_seed(Seed(OAuthVisitor { reader: r }))?),
                _ => {
                    let value = map.next_value::<Value>()?;
                    r.unknown(key.clone());
                    f.extra.insert(key, value);
                }
            }
            r.set_field(None);
        }
        entry(r, self.name, f)
    }
}

fn extend_allow(allow: &mut Option<Vec<String>>, more: Option<Vec<String>>) {
    if let Some(more) = more {
        allow.get_or_insert_with(Vec::new).extend(more);
    }
}

/// The entry the fields make, or the error of the first field that does not fit the others.
fn entry<E: de::Error>(r: &Reader, name: String, f: Fields) -> Result<ServerEntry, E> {
    let fail = |field: &str, reason: String| r.fail::<E>(Some(field.into()), reason);
    let process_fields = [
        ("args", f.args.is_some()),
        ("env", f.env.is_some()),
        ("cwd", f.cwd.is_some()),
    ];
    let has_headers = f.headers.is_some();
    let transport = match (f.kind.as_deref(), f.command, f.url) {
        (None | Some("stdio"), Some(command), None) => ServerTransport::Stdio {
            command,
            args: f.args.unwrap_or_default(),
            env: f.env.unwrap_or_default(),
            cwd: f.cwd.map(Into::into),
        },
        (None, Some(_), Some((given, _))) => {
            return Err(fail(
                given,
                format!("both `command` and `{given}`: give one (a stdio or an HTTP server)"),
            ));
        }
        (None, None, None) => {
            return Err(fail(
                "command",
                "neither `command` (a stdio server) nor `url` (an HTTP server)".into(),
            ));
        }
        (Some("stdio"), _, Some((given, _))) => {
            return Err(fail(
                given,
                format!("`type` \"stdio\" takes `command`, not `{given}`"),
            ));
        }
        (Some("stdio"), None, None) => {
            return Err(fail("command", "`type` \"stdio\" needs `command`".into()));
        }
        (Some(kind @ ("http" | "streamable-http" | "streamableHttp" | "sse")), command, url) => {
            if command.is_some() {
                return Err(fail(
                    "command",
                    format!("`type` \"{kind}\" takes `url`, not `command`"),
                ));
            }
            let Some((_, url)) = url else {
                return Err(fail("url", format!("`type` \"{kind}\" needs `url`")));
            };
            let headers = f.headers.unwrap_or_default();
            if kind == "sse" {
                ServerTransport::Sse { url, headers }
            } else {
                ServerTransport::Http { url, headers }
            }
        }
        (None, None, Some((_, url))) => ServerTransport::Http {
            url,
            headers: f.headers.unwrap_or_default(),
        },
        (Some(other), _, _) => {
            return Err(fail(
                "type",
                format!(
                    "unsupported `type` \"{}\": stdio, http (streamable-http) or sse",
                    shown(other)
                ),
            ));
        }
    };
    let stdio = matches!(transport, ServerTransport::Stdio { .. });
    if stdio {
        if has_headers {
            r.ignored("headers".into(), "a stdio server has no HTTP headers");
        }
    } else {
        for (field, given) in process_fields {
            if given {
                r.ignored(field.into(), "an HTTP server is not a process");
            }
        }
    }
    if matches!(transport, ServerTransport::Sse { .. })
        && matches!(f.era, Some(EraMode::Auto | EraMode::Modern))
    {
        return Err(fail(
            "era",
            "`type` \"sse\" speaks the legacy era only (\"legacy\", or no `era`)".into(),
        ));
    }
    let enabled = match (f.enabled, f.disabled) {
        (Some(enabled), Some(disabled)) if enabled == disabled => {
            return Err(fail(
                "disabled",
                format!("`disabled: {disabled}` contradicts `enabled: {enabled}`"),
            ));
        }
        (Some(enabled), _) => enabled,
        (None, Some(disabled)) => !disabled,
        (None, None) => true,
    };
    Ok(ServerEntry {
        name,
        transport,
        timeout: f.timeout,
        enabled,
        era: f.era,
        tools: ToolFilter::new(f.allow, f.deny),
        oauth: f.oauth,
        extra: f.extra,
    })
}

fn string<E: de::Error>(r: &Reader, field: &str, v: Value) -> Result<String, E> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(r.fail(
            Some(field.into()),
            format!("must be a string, not {}", kind(&other)),
        )),
    }
}

fn boolean<E: de::Error>(r: &Reader, field: &str, v: Value) -> Result<bool, E> {
    match v {
        Value::Bool(b) => Ok(b),
        other => Err(r.fail(
            Some(field.into()),
            format!("must be true or false, not {}", kind(&other)),
        )),
    }
}

fn era<E: de::Error>(r: &Reader, v: Value) -> Result<EraMode, E> {
    let text = string(r, "era", v)?;
    match text.as_str() {
        "auto" => Ok(EraMode::Auto),
        "legacy" => Ok(EraMode::Legacy),
        "modern" => Ok(EraMode::Modern),
        other => Err(r.fail(
            None,
            format!("unknown era \"{}\": auto, legacy or modern", shown(other)),
        )),
    }
}

/// `timeout`: a whole number of milliseconds (as Gemini CLI writes it) or a string such as
/// `"500ms"`, `"30s"`, `"2m"`, `"1h"`; more than zero, at most [`MAX_TIMEOUT`].
fn timeout<E: de::Error>(r: &Reader, v: Value) -> Result<Duration, E> {
    const HOW: &str =
        "a whole number of milliseconds or a string such as \"500ms\", \"30s\", \"2m\"";
    let parsed = match &v {
        Value::Number(n) => n.as_u64().map(Duration::from_millis),
        Value::String(s) => duration(s),
        _ => None,
    };
    match parsed {
        None if matches!(v, Value::Number(_) | Value::String(_)) => {
            Err(r.fail(None, format!("must be {HOW}")))
        }
        None => Err(r.fail(None, format!("must be {HOW}, not {}", kind(&v)))),
        Some(d) if d.is_zero() => Err(r.fail(None, "must be more than zero".into())),
        Some(d) if d > MAX_TIMEOUT => Err(r.fail(None, "must be at most 24 hours".into())),
        Some(d) => Ok(d),
    }
}

/// `"<digits><unit>"` with unit `ms`, `s`, `m` or `h` (none: milliseconds).
fn duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let n: u64 = number.parse().ok()?;
    let millis = match unit.trim_start() {
        "" | "ms" => Some(n),
        "s" => n.checked_mul(1_000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        _ => None,
    }?;
    Some(Duration::from_millis(millis))
}

/// A list of strings (`args`, `tools.allow`, …).
fn list<'r>(reader: &'r Reader, field: &str) -> StringList<'r> {
    StringList {
        reader,
        field: field.into(),
    }
}

struct StringList<'r> {
    reader: &'r Reader,
    field: String,
}

impl Shaped for StringList<'_> {
    fn reader(&self) -> &Reader {
        self.reader
    }
    fn label(&self) -> Option<String> {
        Some(self.field.clone())
    }
    fn wanted(&self) -> &'static str {
        "an array of strings"
    }
}

impl<'de> Visitor<'de> for StringList<'_> {
    type Value = Vec<String>;

    refuse_scalars!();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of strings")
    }

    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<Vec<String>, A::Error> {
        Err(self.refuse("an object"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<String>, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element::<Value>()? {
            match v {
                Value::String(s) => out.push(s),
                other => {
                    return Err(self.reader.fail(
                        Some(format!("{}[{}]", self.field, out.len())),
                        format!("must be a string, not {}", kind(&other)),
                    ));
                }
            }
        }
        Ok(out)
    }
}

/// `env` or `headers`: an object of strings, kept in the file's order, values as [`Secret`]s.
struct StringMap<'r> {
    reader: &'r Reader,
    field: &'static str,
}

impl<'r> StringMap<'r> {
    /// `env`: strings, and numbers as VS Code allows (written as JSON writes them); `null`
    /// (VS Code: "unset it") is ignored with a warning.
    fn env(reader: &'r Reader) -> Self {
        StringMap {
            reader,
            field: "env",
        }
    }

    /// `headers`: strings only.
    fn headers(reader: &'r Reader) -> Self {
        StringMap {
            reader,
            field: "headers",
        }
    }
}

impl Shaped for StringMap<'_> {
    fn reader(&self) -> &Reader {
        self.reader
    }
    fn label(&self) -> Option<String> {
        Some(self.field.into())
    }
    fn wanted(&self) -> &'static str {
        "an object of strings"
    }
}

impl<'de> Visitor<'de> for StringMap<'_> {
    type Value = Vec<(String, Secret)>;

    map_only!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out: Vec<(String, Secret)> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let field = format!("{}.{key}", self.field);
            let value = map.next_value::<Value>()?;
            if out.iter().any(|(k, _)| *k == key) {
                return Err(self.reader.fail(Some(field), "is given twice".into()));
            }
            let value = match value {
                Value::String(s) => s,
                Value::Number(n) if self.field == "env" => n.to_string(),
                Value::Null if self.field == "env" => {
                    self.reader.ignored(
                        field,
                        "null (unset) is ignored: a server's environment starts from the default allowlist",
                    );
                    continue;
                }
                other => {
                    return Err(self.reader.fail(
                        Some(field),
                        format!("must be a string, not {}", kind(&other)),
                    ));
                }
            };
            out.push((key, Secret::new(value)));
        }
        Ok(out)
    }
}

/// `tools`: `{"allow": [globs], "deny": [globs]}`.
struct ToolsVisitor<'r> {
    reader: &'r Reader,
}

impl Shaped for ToolsVisitor<'_> {
    fn reader(&self) -> &Reader {
        self.reader
    }
    fn label(&self) -> Option<String> {
        Some("tools".into())
    }
    fn wanted(&self) -> &'static str {
        "an object (`allow`, `deny`)"
    }
}

impl<'de> Visitor<'de> for ToolsVisitor<'_> {
    type Value = (Option<Vec<String>>, Vec<String>);

    map_only!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut allow, mut deny) = (None, Vec::new());
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "allow" => {
                    allow = Some(map.next_value_seed(Seed(list(self.reader, "tools.allow")))?)
                }
                "deny" => deny = map.next_value_seed(Seed(list(self.reader, "tools.deny")))?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    self.reader.unknown(format!("tools.{key}"));
                }
            }
        }
        Ok((allow, deny))
    }
}

/// `oauth`: what a host's file says about the server's authorization.
struct OAuthVisitor<'r> {
    reader: &'r Reader,
}

impl Shaped for OAuthVisitor<'_> {
    fn reader(&self) -> &Reader {
        self.reader
    }
    fn label(&self) -> Option<String> {
        Some("oauth".into())
    }
    fn wanted(&self) -> &'static str {
        "an object"
    }
}

impl<'de> Visitor<'de> for OAuthVisitor<'_> {
    type Value = OAuthSettings;

    map_only!();

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OAuthSettings, A::Error> {
        let r = self.reader;
        let mut o = OAuthSettings::default();
        while let Some(key) = map.next_key::<String>()? {
            let field = format!("oauth.{key}");
            let value = map.next_value::<Value>()?;
            match key.as_str() {
                "clientId" => o.client_id = Some(string(r, &field, value)?),
                "clientSecret" => o.client_secret = Some(Secret::new(string(r, &field, value)?)),
                "redirectUri" => o.redirect_uri = Some(string(r, &field, value)?),
                "authServerMetadataUrl" => {
                    o.auth_server_metadata_url = Some(string(r, &field, value)?);
                }
                "callbackPort" => {
                    let port = value.as_u64().and_then(|p| u16::try_from(p).ok());
                    match port {
                        Some(port) if port > 0 => o.callback_port = Some(port),
                        _ => {
                            return Err(
                                r.fail(Some(field), "must be a port number (1 to 65535)".into())
                            );
                        }
                    }
                }
                // Claude Code: one space-separated string; Gemini CLI: an array.
                "scopes" => {
                    o.scopes = match value {
                        Value::String(s) => s.split_whitespace().map(String::from).collect(),
                        Value::Array(items) => {
                            let mut scopes = Vec::with_capacity(items.len());
                            for (i, item) in items.into_iter().enumerate() {
                                scopes.push(string(r, &format!("{field}[{i}]"), item)?);
                            }
                            scopes
                        }
                        other => {
                            return Err(r.fail(
                                Some(field),
                                format!(
                                    "must be a string or an array of strings, not {}",
                                    kind(&other)
                                ),
                            ));
                        }
                    };
                }
                _ => {
                    r.unknown(field);
                    o.extra.insert(key, value);
                }
            }
        }
        const DISCOVERED: &str = "the runtime takes them from the server's challenge and metadata";
        const LOOPBACK: &str =
            "the runtime's loopback user agent listens on a port the system picks";
        if !o.scopes.is_empty() {
            r.ignored("oauth.scopes".into(), DISCOVERED);
        }
        if o.callback_port.is_some() {
            r.ignored("oauth.callbackPort".into(), LOOPBACK);
        }
        if o.redirect_uri.is_some() {
            r.ignored("oauth.redirectUri".into(), LOOPBACK);
        }
        if o.client_id.is_some() && o.issuer().is_none() {
            r.ignored(
                "oauth.clientId".into(),
                "the runtime uses a pre-registered client only with its issuer: give `authServerMetadataUrl`",
            );
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::duration;
    use std::time::Duration;

    #[test]
    fn durations_are_whole_numbers_with_a_unit() {
        assert_eq!(duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(duration(" 2m "), Some(Duration::from_secs(120)));
        assert_eq!(duration("1h"), Some(Duration::from_secs(3600)));
        assert_eq!(duration("1500"), Some(Duration::from_millis(1500)));
        assert_eq!(duration("1.5s"), None);
        assert_eq!(duration("s"), None);
        assert_eq!(duration("10d"), None);
        assert_eq!(duration("-1s"), None);
        assert_eq!(duration("99999999999999999999h"), None);
    }
}
