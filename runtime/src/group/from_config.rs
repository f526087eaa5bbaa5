//! A group from a host's configuration file: [`ClientGroup::apply`] makes the group exactly
//! what a [`GroupConfig`] says (a settings reload changes only the servers whose entry
//! changed), and [`GroupBuilder::start_config`] starts a group from one.

use super::config::{GroupConfig, ServerEntry};
use super::{Applied, ClientGroup, GroupBuilder, GroupError};

impl ClientGroup {
    /// Makes the group exactly the enabled servers of `config`: a server whose entry is
    /// equal (after variable expansion) to the one it was started from keeps running as it
    /// is; a changed one is replaced (stopped, reaped, started again); one missing or
    /// disabled is removed; a new one is added. New servers start concurrently. The group's
    /// [`GroupBuilder::configure`] hook runs on each new server's builder (for example to make
    /// its calls wait for ready). An entry that cannot become a client (a bad URL or header
    /// value) fails the whole apply with [`GroupError::Config`] before anything changes.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use mcp_runtime::group::{ClientGroup, GroupConfig};
    ///
    /// let group = ClientGroup::builder()
    ///     .configure(|_, b| b.wait_for_ready(true))
    ///     .start_config(&GroupConfig::load("claude_desktop_config.json")?)
    ///     .await?;
    /// // The user edited the file: only what changed is restarted.
    /// let applied = group.apply(&GroupConfig::load("claude_desktop_config.json")?).await?;
    /// println!("added {:?}, replaced {:?}, removed {:?}", applied.added, applied.replaced, applied.removed);
    /// # Ok(()) }
    /// ```
    pub async fn apply(&self, config: &GroupConfig) -> Result<Applied, GroupError> {
        let entries = builders(config)?;
        self.apply_builders(entries).await
    }
}

impl GroupBuilder {
    /// Starts the group with the enabled servers of `config` (as [`GroupBuilder::start`], and
    /// with each server's entry kept, so that a later [`ClientGroup::apply`] of the same
    /// configuration changes nothing). Servers added with [`GroupBuilder::server`] start
    /// too.
    pub async fn start_config(self, config: &GroupConfig) -> Result<ClientGroup, GroupError> {
        let entries = builders(config)?;
        let group = self.start().await?;
        let mut with_config: Vec<(String, Option<ServerEntry>, crate::ClientBuilder)> = Vec::new();
        for (name, entry, builder) in entries {
            with_config.push((name, Some(entry), builder));
        }
        // The servers given by hand stay (no fingerprint: a later apply replaces them).
        group.add_configured(with_config).await?;
        Ok(group)
    }
}

/// The enabled entries of `config`, each with its builder; the first entry that cannot
/// become a client is the error.
fn builders(
    config: &GroupConfig,
) -> Result<Vec<(String, ServerEntry, crate::ClientBuilder)>, GroupError> {
    let mut out = Vec::new();
    for entry in config.servers().iter().filter(|e| e.enabled) {
        let builder = entry.builder().map_err(|source| GroupError::Config {
            server: entry.name.clone(),
            source: std::sync::Arc::new(source),
        })?;
        out.push((entry.name.clone(), entry.clone(), builder));
    }
    Ok(out)
}
