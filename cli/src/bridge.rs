//! `mcpc bridge`: MCP served on stdin/stdout to the host that started mcpc, everything
//! forwarded to the server of `--http`, `--sse` or `--stdio` through the client library
//! (`mcp_bridge`). stdout carries only MCP messages; diagnostics go to stderr (`-v`).

use mcp_bridge::{Bridge, BridgeOptions, Ended, HostInfo};
use mcp_runtime::ClientBuilder;

use crate::args::{BridgeArgs, Global};
use crate::connect;
use crate::error::CliError;
use crate::headers;
use crate::sanitize::redact_url;
use crate::signals::Interrupt;

/// Serves the host until it closes stdin or a signal comes; then stops the server (its
/// processes reaped) and returns.
pub async fn run(g: &Global, args: &BridgeArgs, interrupt: &Interrupt) -> Result<(), CliError> {
    if g.group() {
        return Err(CliError::usage(
            "bridge",
            "a bridge of a --config group is not offered yet: give one server with --http, --sse or --stdio",
        ));
    }
    let (builder, login_hint) = upstream(g, args)?;
    let era = g.era().mode();
    let connect_timeout = g.connect_timeout;
    let call_timeout = args.call_timeout;
    let bridge = Bridge::new(move |host: &HostInfo| {
        // The upstream sees the host's name (a server may show who asks).
        let name = if host.name.is_empty() {
            "mcpc-bridge"
        } else {
            host.name.as_str()
        };
        builder
            .client_info(name, host.version.clone())
            .era(era)
            .request_timeout(call_timeout)
            .connect_timeout(connect_timeout)
            .validate_output(false)
    });
    let mut options = BridgeOptions::default();
    options.call_timeout = call_timeout;
    options.login_hint = login_hint;
    let report = bridge
        .options(options)
        .serve_stdio(async {
            interrupt.fired().await;
        })
        .await;
    tracing::info!(
        target: "mcpc::bridge",
        requests = report.requests,
        answered = report.answered,
        cancelled = report.cancelled,
        invalid = report.invalid,
        server_requests = report.server_requests,
        upstream_closed = report.upstream_closed,
        ended = ?report.ended,
        "bridge session ended"
    );
    // The host closing stdin is the normal end; a signal too (the host stopping its server).
    let _: Ended = report.ended;
    Ok(())
}

/// The upstream's builder from the flags (checked before the host is served), and what an
/// authorization failure tells the host to run.
fn upstream(g: &Global, args: &BridgeArgs) -> Result<(ClientBuilder, Option<String>), CliError> {
    let headers = headers::parse_all(&g.headers)?;
    let web = match (&g.http, &g.sse) {
        (Some(url), _) => Some(("--http", url)),
        (None, Some(url)) => Some(("--sse", url)),
        (None, None) => None,
    };
    match web {
        Some((flag, url)) => {
            let builder = connect::http_builder(g, flag, url, &headers)?.oauth(
                crate::auth::oauth_for_bridge(g.connect_timeout, args.allow_browser_login),
            );
            let hint = format!("run `mcpc {flag} {} login`", redact_url(url));
            Ok((builder, Some(hint)))
        }
        None => {
            if !headers.is_empty() {
                return Err(CliError::usage(
                    "-H/--header",
                    "headers are for --http and --sse servers, not --stdio ones",
                ));
            }
            let (builder, _) = connect::stdio_builder(g)?;
            Ok((builder, None))
        }
    }
}
