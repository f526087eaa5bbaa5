//! [`GroupError`]: why a group operation failed. A name the host asked for is shown escaped
//! and bounded; nothing of a server's configuration (command line, environment, headers) is
//! ever in one.

use mcp_machine::Failure;

use crate::Error;
use crate::shown::shown_name;

/// Why a group operation failed: an unknown or ambiguous name, the server's own error (with
/// which server), or servers that failed to start.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum GroupError {
    /// No server of the group has this name.
    #[error("no server named {} in the group", shown_name(server))]
    UnknownServer {
        /// The name asked for.
        server: String,
    },
    /// A server of this name is already in the group (or the name was given twice).
    #[error("a server named {} is already in the group", shown_name(server))]
    DuplicateServer {
        /// The name.
        server: String,
    },
    /// A configuration entry could not be made into a client (its URL or a header value is
    /// not valid): the server is left out. Names the server and what was wrong, never a value.
    #[error("server {}: {source}", shown_name(server))]
    Config {
        /// The server's name.
        server: String,
        /// What was wrong with its entry.
        #[source]
        source: std::sync::Arc<crate::group::config::BuildError>,
    },
    /// No tool is listed under this merged name.
    #[error("no server of the group lists a tool named {}", shown_name(name))]
    UnknownTool {
        /// The name asked for.
        name: String,
    },
    /// The server's configuration entry does not allow this tool (`tools.allow` /
    /// `tools.deny`): it is not in the merged view, and the group does not call it.
    #[error(
        "server {} is not allowed tool {} by its configuration",
        shown_name(server),
        shown_name(tool)
    )]
    ToolNotAllowed {
        /// The server's name.
        server: String,
        /// The tool's name on the server.
        tool: String,
    },
    /// No prompt is listed under this merged name.
    #[error("no server of the group lists a prompt named {}", shown_name(name))]
    UnknownPrompt {
        /// The name asked for.
        name: String,
    },
    /// No server lists this URI, and no template of one matches it.
    #[error(
        "no server of the group lists resource {} or a template matching it",
        shown_name(uri)
    )]
    UnknownResource {
        /// The URI asked for.
        uri: String,
    },
    /// Several servers list this URI (or have templates matching it): read it with
    /// [`super::ClientGroup::read_resource_on`].
    #[error("resource {} is listed by several servers ({}): name one", shown_name(uri), servers.join(", "))]
    AmbiguousResource {
        /// The URI asked for.
        uri: String,
        /// The servers that list it, by name.
        servers: Vec<String>,
    },
    /// The server's call failed: its error, typed, and which server.
    #[error("server {}: {source}", shown_name(server))]
    Server {
        /// The server.
        server: String,
        /// Its error.
        #[source]
        source: Error,
    },
    /// Fail-closed ([`super::StartMode::FailClosed`]): these servers' first connection
    /// failed (each with its cause); the operation was undone.
    #[error("{} failed to start: {}", plural(failures.len()), list(failures))]
    Start {
        /// Each server that failed, with why.
        failures: Vec<StartFailure>,
    },
    /// The group was stopped.
    #[error("the group is stopped")]
    Stopped,
}

impl GroupError {
    /// The server's own error, for [`GroupError::Server`].
    pub fn server_error(&self) -> Option<&Error> {
        match self {
            GroupError::Server { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// One server whose first connection failed: its name, why (typed), its last stderr lines.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct StartFailure {
    /// The server's name in the group.
    pub server: String,
    /// Why its first attempt failed.
    pub cause: Failure,
    /// The last lines it wrote on stderr, raw (escape them before showing them).
    pub stderr_tail: Vec<String>,
}

impl std::fmt::Display for StartFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", shown_name(&self.server), self.cause)
    }
}

fn plural(n: usize) -> String {
    if n == 1 {
        "1 server".to_owned()
    } else {
        format!("{n} servers")
    }
}

fn list(failures: &[StartFailure]) -> String {
    failures
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
