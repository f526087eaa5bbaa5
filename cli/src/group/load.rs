//! Reading `--config FILE`, or the files of `--config-from HOST`, into a [`GroupConfig`]:
//! its warnings on stderr (unset `${VAR}`, unknown fields; escaped, never a value), its errors
//! as exit 7 naming the file, the server, the field, the line and column.

use std::path::PathBuf;

use mcp_runtime::group::{ConfigError, GroupConfig, HostKind, ServerEntry, well_known_paths};

use crate::args::{ConfigHost, Global};
use crate::error::{CliError, Exit};

/// The configuration the global options name, its warnings printed.
pub fn load(g: &Global) -> Result<GroupConfig, CliError> {
    let config = match (&g.config, g.config_from) {
        (Some(path), _) => GroupConfig::load(path).map_err(|e| config_error("--config", &e))?,
        (None, Some(host)) => {
            let kind = host_kind(host);
            let paths: Vec<PathBuf> = well_known_paths()
                .into_iter()
                .filter(|(k, _)| *k == kind)
                .map(|(_, p)| p)
                .collect();
            merge(&format!("--config-from {}", flag_value(host)), kind, &paths)?
        }
        (None, None) => return Err(CliError::usage("--config", "no configuration given")),
    };
    warn_all(&config);
    Ok(config)
}

fn warn_all(config: &GroupConfig) {
    for warning in config.warnings() {
        errln!("mcpc: warning: {warning}");
    }
}

/// A configuration that cannot be used: exit 7, the library's message (file, server, field,
/// line:column; never a value of the file).
pub fn config_error(flag: &str, e: &dyn std::fmt::Display) -> CliError {
    CliError::new(Exit::Config, flag, e.to_string())
}

fn host_kind(host: ConfigHost) -> HostKind {
    match host {
        ConfigHost::ClaudeDesktop => HostKind::ClaudeDesktop,
        ConfigHost::ClaudeCode => HostKind::ClaudeCode,
        ConfigHost::Cursor => HostKind::Cursor,
        ConfigHost::VsCode => HostKind::VsCode,
    }
}

fn flag_value(host: ConfigHost) -> &'static str {
    match host {
        ConfigHost::ClaudeDesktop => "claude-desktop",
        ConfigHost::ClaudeCode => "claude-code",
        ConfigHost::Cursor => "cursor",
        ConfigHost::VsCode => "vscode",
    }
}

/// The servers of every file of `paths` that exists, in order: a server named again in a
/// later file (the project's, after the user's) replaces the earlier one, with a warning. A
/// file without servers (`~/.claude.json` often has none of its own) is skipped; any other
/// error is the error. Each file's warnings are printed here.
fn merge(flag: &str, kind: HostKind, paths: &[PathBuf]) -> Result<GroupConfig, CliError> {
    let mut read: Vec<String> = Vec::new();
    let mut servers: Vec<(ServerEntry, String)> = Vec::new();
    for path in paths.iter().filter(|p| p.is_file()) {
        let config = match GroupConfig::load(path) {
            Ok(config) => config,
            Err(ConfigError::NoServers { .. }) => continue,
            Err(e) => return Err(config_error(flag, &e)),
        };
        warn_all(&config);
        let file = path.display().to_string();
        for entry in config.into_servers() {
            match servers.iter_mut().find(|(e, _)| e.name == entry.name) {
                Some(slot) => {
                    errln!(
                        "mcpc: warning: {file}: server `{}` replaces the one of {}",
                        entry.name,
                        slot.1
                    );
                    *slot = (entry, file.clone());
                }
                None => servers.push((entry, file.clone())),
            }
        }
        read.push(file);
    }
    if read.is_empty() {
        let looked: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
        return Err(CliError::new(
            Exit::Config,
            flag,
            format!(
                "no {kind} configuration with servers found (looked at: {})",
                looked.join(", ")
            ),
        ));
    }
    GroupConfig::from_entries(read.join(" + "), servers.into_iter().map(|(e, _)| e))
        .map_err(|e| config_error(flag, &e))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Scratch(PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn the_files_of_a_host_merge_the_later_winning_and_one_without_servers_skipped() {
        let dir = Scratch(std::env::temp_dir().join(format!("mcpc-merge-{}", std::process::id())));
        std::fs::create_dir_all(&dir.0).unwrap();
        let user = dir.0.join("user.json");
        let none = dir.0.join("none.json");
        let project = dir.0.join("project.json");
        std::fs::write(
            &user,
            r#"{"mcpServers": {"a": {"command": "a-user"}, "b": {"command": "b"}}}"#,
        )
        .unwrap();
        std::fs::write(&none, r#"{"theme": "dark"}"#).unwrap();
        std::fs::write(
            &project,
            r#"{"mcpServers": {"a": {"command": "a-project"}}}"#,
        )
        .unwrap();
        let missing = dir.0.join("missing.json");
        let paths = [user, none, missing.clone(), project];
        let config = merge("--config-from claude-code", HostKind::ClaudeCode, &paths).unwrap();
        let names: Vec<&str> = config.servers().iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        let mcp_runtime::group::ServerTransport::Stdio { command, .. } =
            &config.servers()[0].transport
        else {
            panic!("stdio")
        };
        assert_eq!(command, "a-project");

        let e = merge("--config-from cursor", HostKind::Cursor, &[missing]).unwrap_err();
        assert_eq!(e.exit, Exit::Config);
        assert!(
            e.why
                .starts_with("no Cursor configuration with servers found (looked at: "),
            "{}",
            e.why
        );
    }
}
