//! [`GroupBuilder`]: what a [`ClientGroup`] is built with (its servers, [`StartMode`], the
//! naming rule, the handler of server requests, a hook on each server's builder, the live
//! lists' options) and its start.

use std::sync::Arc;

use super::error::GroupError;
use super::handler::{GroupHandler, HandlerSource, ServerHandler};
use super::naming::{Naming, NamingRule};
use super::supervise::ClientGroup;
use crate::ClientBuilder;
use crate::handler::ClientHandler;
use crate::live_lists::LiveListOptions;

/// What a group does with a server whose first connection fails.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum StartMode {
    /// The server stays in the group and keeps retrying under its own backoff, never blocking
    /// the others (the default: one bad entry must not take a host down).
    #[default]
    FailOpen,
    /// [`GroupBuilder::start`] fails naming every server whose first connection failed (and
    /// stops the others); a server added at run time that fails is removed, and the add fails.
    FailClosed,
}

/// A hook given each server's builder before it starts.
type Configure = Arc<dyn Fn(&str, ClientBuilder) -> ClientBuilder + Send + Sync>;

/// What a group was built with.
#[derive(Clone, Default)]
pub(super) struct Settings {
    pub(super) mode: StartMode,
    pub(super) naming: NamingRule,
    pub(super) handler: Option<HandlerSource>,
    pub(super) configure: Option<Configure>,
    pub(super) live: LiveListOptions,
    #[cfg(feature = "otel")]
    pub(super) telemetry: Option<crate::otel::Telemetry>,
}

/// Builds a [`ClientGroup`]: its servers, what happens when one fails to start, how the merged
/// view names things, who answers the servers' requests.
///
/// ```no_run
/// use mcp_runtime::{ClientBuilder, ClientGroup};
/// use serde_json::json;
///
/// # async fn run() -> Result<(), mcp_runtime::GroupError> {
/// let group = ClientGroup::builder()
///     .server("everything", ClientBuilder::stdio("npx", ["-y", "@modelcontextprotocol/server-everything"]))
///     .server("time", ClientBuilder::stdio("uvx", ["mcp-server-time"]))
///     .start() // every first connection at once; a failing one keeps retrying by itself
///     .await?;
/// for tool in &group.view().tools {
///     println!("{} (from {})", tool.name, tool.server);
/// }
/// let result = group.call_tool("get_current_time", json!({"timezone": "UTC"})).await?;
/// println!("{}", result.text());
/// group.stop().await; // every server stopped, every child reaped
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct GroupBuilder {
    servers: Vec<(String, ClientBuilder)>,
    settings: Settings,
}

impl std::fmt::Debug for GroupBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupBuilder")
            .field(
                "servers",
                &self.servers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("mode", &self.settings.mode)
            .field("naming", &self.settings.naming)
            .finish_non_exhaustive()
    }
}

impl GroupBuilder {
    /// Adds server `name`, connected as `builder` says (its own timeouts, backoff, era).
    pub fn server(mut self, name: impl Into<String>, builder: ClientBuilder) -> Self {
        self.servers.push((name.into(), builder));
        self
    }

    /// What happens to a server whose first connection fails ([`StartMode::FailOpen`]).
    pub fn start_mode(mut self, mode: StartMode) -> Self {
        self.settings.mode = mode;
        self
    }

    /// [`StartMode::FailClosed`]: every server must start.
    pub fn fail_closed(self) -> Self {
        self.start_mode(StartMode::FailClosed)
    }

    /// The whole naming rule of the merged view ([`NamingRule::default`]).
    pub fn naming_rule(mut self, rule: NamingRule) -> Self {
        self.settings.naming = rule;
        self
    }

    /// The naming policy ([`Naming::PrefixOnCollision`]).
    pub fn naming(mut self, naming: Naming) -> Self {
        self.settings.naming = self.settings.naming.naming(naming);
        self
    }

    /// The separator of prefixed names (`__`; see [`NamingRule`] for why).
    pub fn separator(mut self, separator: impl Into<String>) -> Self {
        self.settings.naming = self.settings.naming.separator(separator);
        self
    }

    /// A hook naming each tool and prompt: `f(server, name)` (see [`NamingRule::rename`]).
    pub fn rename(mut self, f: impl Fn(&str, &str) -> String + Send + Sync + 'static) -> Self {
        self.settings.naming = self.settings.naming.rename(f);
        self
    }

    /// Answers every server's requests (sampling, roots, elicitation), told which server
    /// asks. Replaces a handler set on a server's own builder (the
    /// [`GroupBuilder::configure`] hook runs after, and may set another).
    pub fn handler(mut self, handler: impl GroupHandler) -> Self {
        self.settings.handler = Some(ServerHandler::tagging(Arc::new(handler)));
        self
    }

    /// Builds each server's handler from its name, e.g. a [`crate::Handlers`] whose closures
    /// capture it. Same placement as [`GroupBuilder::handler`].
    pub fn handler_for<H: ClientHandler>(
        mut self,
        f: impl Fn(&str) -> H + Send + Sync + 'static,
    ) -> Self {
        self.settings.handler = Some(ServerHandler::built(f));
        self
    }

    /// A hook given each server's builder, with its name, before it starts (at build time and
    /// for every server added later): shared options (client info, timeouts) in one place.
    pub fn configure(
        mut self,
        f: impl Fn(&str, ClientBuilder) -> ClientBuilder + Send + Sync + 'static,
    ) -> Self {
        self.settings.configure = Some(Arc::new(f));
        self
    }

    /// Records every server's client into `telemetry` ([`ClientBuilder::telemetry`]), each
    /// under its name (`mcp_client_rs.server.name` on its spans and metrics), servers added
    /// later included; before the [`GroupBuilder::configure`] hook, which may change it. Only
    /// with the `otel` feature.
    #[cfg(feature = "otel")]
    pub fn telemetry(mut self, telemetry: crate::otel::Telemetry) -> Self {
        self.settings.telemetry = Some(telemetry);
        self
    }

    /// How each server's lists are kept current ([`LiveListOptions::default`]).
    pub fn live_lists(mut self, options: LiveListOptions) -> Self {
        self.settings.live = options;
        self
    }

    /// Starts every server at once and waits until each one's first connection attempt ended
    /// (each bounded by its own connect timeout) and each ready one's lists were fetched once.
    /// Fail-open (the default), it succeeds whatever failed: the failed servers keep retrying
    /// ([`ClientGroup::snapshot`] says why they are down). Fail-closed, it fails with
    /// [`GroupError::Start`] naming every server that failed, after stopping all of them.
    /// Two servers of one name are [`GroupError::DuplicateServer`]. Must be called inside a
    /// tokio runtime.
    pub async fn start(self) -> Result<ClientGroup, GroupError> {
        ClientGroup::start_with(self.settings, self.servers).await
    }
}
