//! Many servers, one host: [`ClientGroup`], a set of named MCP servers, each its own
//! [`crate::Client`] (own transport, connection table, backoff and session), seen as one.
//!
//! - **Supervision** (`builder`, `supervise`): servers start concurrently; one that fails to start does
//!   not stop the others and keeps retrying under its own backoff ([`StartMode::FailOpen`],
//!   the default), or the start fails naming every server that failed
//!   ([`StartMode::FailClosed`]). Servers are added, removed and replaced at run time;
//!   [`ClientGroup::apply_builders`] changes only the servers whose entry changed (the seam of
//!   a settings reload); [`ClientGroup::stop`] stops all in parallel and reaps every child.
//! - **One merged view** (`merged`, `naming`): tools, prompts, resources and templates across
//!   servers; names never silently dropped or overwritten ([`NamingRule`]: prefix on collision
//!   by default, or always; the separator and a rename hook configurable); each item carries
//!   its server and its own name.
//! - **Routing** (`route`): [`ClientGroup::call_tool`] and [`ClientGroup::get_prompt`] by
//!   merged name, [`ClientGroup::read_resource`] by which server lists the URI (or has a
//!   template matching it), and the `_on` forms naming the server.
//! - **Tagged feeds** (`events`): notifications and transitions with their server; server
//!   requests reach the host's [`GroupHandler`] told the server (`handler`).
//! - **Fresh lists**: each server's [`crate::LiveLists`] re-fetches on `list_changed` and on
//!   reconnect; the view follows, and [`ClientGroup::changes`] says what changed, by server.
//! - **A snapshot** (`snapshot`): each server's state, era, last error, list sizes, counters.
//!
//! - **Configuration** ([`config`]): the server configuration files hosts share
//!   (`{"mcpServers": …}`, VS Code's `{"servers": …}`) read into [`ServerEntry`]s that make
//!   [`crate::ClientBuilder`]s; [`GroupBuilder::start_config`] and [`ClientGroup::apply`] take
//!   them whole.
//! - **Waiting for ready**: a group started from a configuration makes its calls wait for
//!   their server's ready connection up to their deadline ([`crate::ClientBuilder::wait_for_ready`],
//!   decided by the table); a server turned away for good (its program does not exist) answers
//!   at once with [`crate::Error::Unavailable`], in [`GroupError::Server`].
//!
//! What it is not: a proxy (no server is exposed to others).

mod builder;
pub mod config;
mod error;
mod events;
mod expand;
mod from_config;
mod handler;
mod merged;
mod naming;
mod route;
mod snapshot;
mod supervise;
mod template;

pub use builder::{GroupBuilder, StartMode};
pub use config::{
    BuildError, ConfigError, ConfigWarning, GroupConfig, HostKind, OAuthSettings, ServerEntry,
    ServerTransport, ToolFilter, well_known_paths,
};
pub use error::{GroupError, StartFailure};
pub use events::{
    GROUP_CHANGE_LIMITS, GROUP_TRANSITION_LIMITS, GroupNotification, GroupTransition,
};
pub use handler::GroupHandler;
pub use merged::{ChangedItem, GroupChange, Merged, MergedView};
pub use naming::{DEFAULT_SEPARATOR, Naming, NamingRule, RenameHook};
pub use snapshot::{GroupSnapshot, ServerSnapshot};
pub use supervise::{Applied, ClientGroup};
