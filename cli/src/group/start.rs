//! Starting the group of a configuration: each server's builder from its entry, then mcpc's
//! settings on top (its name, the handler of server requests told the server, the connect
//! bound, output validation, tasks, waiting for ready; `--era` when given); fail-open.

use std::collections::HashSet;

use mcp_runtime::group::{GroupConfig, GroupError, ServerTransport};
use mcp_runtime::{ClientBuilder, ClientGroup, GroupBuilder};

use crate::args::Global;
use crate::connect::SHUTDOWN_GRACE;
use crate::error::CliError;
use crate::interact;
use crate::signals::Interrupt;

/// Starts every enabled server of `config` at once and waits for each one's first attempt
/// (each bounded by `--connect-timeout`). A server that failed stays in the group, retrying.
/// A signal meanwhile ends mcpc (what was started is killed and reaped by `main`).
pub async fn start(
    g: &Global,
    config: &GroupConfig,
    interrupt: &Interrupt,
    what: &str,
) -> Result<ClientGroup, CliError> {
    let started = group_builder(g, config).start_config(config);
    tokio::select! {
        biased;
        caught = interrupt.fired() => Err(CliError::signalled(what, caught)),
        r = started => r.map_err(|e| start_error(config, &e)),
    }
}

/// Why the group could not start: an entry the library cannot make a client of (exit 7,
/// naming the file, the server and the field), or anything else (exit 3).
fn start_error(config: &GroupConfig, e: &GroupError) -> CliError {
    match e {
        GroupError::Config { source, .. } => {
            super::load::config_error("--config", &format!("{}: {source}", config.file()))
        }
        other => CliError::new(
            crate::error::Exit::Connect,
            "could not start the servers",
            other.to_string(),
        ),
    }
}

/// The group's builder: the configuration's servers get mcpc's settings.
pub fn group_builder(g: &Global, config: &GroupConfig) -> GroupBuilder {
    let stdio: HashSet<String> = config
        .servers()
        .iter()
        .filter(|e| matches!(e.transport, ServerTransport::Stdio { .. }))
        .map(|e| e.name.clone())
        .collect();
    let (sampling, roots) = (g.sampling_reply.clone(), g.roots.clone());
    let era = g.era.map(crate::args::Era::mode);
    let connect_timeout = g.connect_timeout;
    let validate = !g.no_validate_output;
    let group = ClientGroup::builder();
    #[cfg(feature = "otel")]
    let group = match crate::otel::telemetry() {
        Some(telemetry) => group.telemetry(telemetry),
        None => group,
    };
    group
        .handler_for(move |server| interact::handlers(sampling.clone(), &roots, server))
        .configure(move |server, builder| {
            let mut builder = settings(builder, connect_timeout, validate);
            if let Some(era) = era {
                builder = builder.era(era);
            }
            if stdio.contains(server) {
                builder = builder.shutdown_grace(SHUTDOWN_GRACE);
            } else {
                builder = builder.http_connect_timeout(
                    connect_timeout.min(mcp_runtime::transport::DEFAULT_HTTP_CONNECT_TIMEOUT),
                );
            }
            builder
        })
}

/// What every server of an mcpc group gets, whatever its transport. Its call timeout is its
/// entry's `timeout`, else the library's (each call of mcpc sets its own).
pub fn settings(
    builder: ClientBuilder,
    connect_timeout: std::time::Duration,
    validate: bool,
) -> ClientBuilder {
    builder
        .client_info("mcpc", env!("CARGO_PKG_VERSION"))
        .connect_timeout(connect_timeout)
        .validate_output(validate)
        .tasks(mcp_runtime::TaskOptions::new().serve_requests(true))
        .wait_for_ready(true)
}
