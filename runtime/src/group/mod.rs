//! Many servers for one host. [`config`] reads the server configuration files hosts share
//! (`{"mcpServers": …}`, VS Code's `{"servers": …}`) into entries that make
//! [`crate::ClientBuilder`]s.

pub mod config;
mod expand;

pub use config::{
    BuildError, ConfigError, ConfigWarning, GroupConfig, HostKind, OAuthSettings, ServerEntry,
    ServerTransport, ToolFilter, well_known_paths,
};
