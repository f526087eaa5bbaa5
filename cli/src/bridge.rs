//! `mcpc bridge`: MCP served on stdin/stdout to the host that started mcpc, everything
//! forwarded to the server of `--http`, `--sse` or `--stdio` through the client library
//! (`mcp_bridge`). stdout carries only MCP messages; diagnostics go to stderr (`-v`).

use mcp_bridge::http::{HttpFront, HttpOptions, MakeUpstreams};
use mcp_bridge::{Bridge, BridgeOptions, Ended, HostInfo, Upstream};
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
        return group(g, args, interrupt).await;
    }
    let (_, login_hint) = upstream(g, args)?;
    let mut options = BridgeOptions::default();
    options.call_timeout = args.call_timeout;
    options.login_hint = login_hint;
    if let Some(addr) = args.listen {
        return listen(g, args, addr, options, interrupt).await;
    }
    let (builder, _) = upstream(g, args)?;
    let era = g.era().mode();
    let connect_timeout = g.connect_timeout;
    let call_timeout = args.call_timeout;
    let bridge = Bridge::new(move |host: &HostInfo| {
        settle(builder, host, era, connect_timeout, call_timeout)
    });
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

/// `--config FILE` (or `--config-from HOST`): every server of the configuration as one group
/// whose merged view the host sees.
async fn group(g: &Global, args: &BridgeArgs, interrupt: &Interrupt) -> Result<(), CliError> {
    let config = crate::group::load::load(g)?;
    let mut options = BridgeOptions::default();
    options.call_timeout = args.call_timeout;
    if let Some(addr) = args.listen {
        let (g2, config2) = (g.clone(), config.clone());
        let make: MakeUpstreams = std::sync::Arc::new(move |_host: &HostInfo| {
            Upstream::Group(
                Box::new(crate::group::start::group_builder(&g2, &config2)),
                Box::new(config2.clone()),
            )
        });
        return serve_http(addr, args, make, options, interrupt).await;
    }
    let builder = Box::new(crate::group::start::group_builder(g, &config));
    let bridge = Bridge::with(move |_host: &HostInfo| Upstream::Group(builder, Box::new(config)));
    bridge
        .options(options)
        .serve_stdio(async {
            interrupt.fired().await;
        })
        .await;
    Ok(())
}

/// The settings every upstream client of the bridge gets, once the host said who it is: the
/// host's name (a server may show who asks), the era, the bounds.
fn settle(
    builder: ClientBuilder,
    host: &HostInfo,
    era: mcp_runtime::EraMode,
    connect_timeout: std::time::Duration,
    call_timeout: std::time::Duration,
) -> ClientBuilder {
    let name = if host.name.is_empty() {
        "mcpc-bridge"
    } else {
        host.name.as_str()
    };
    let builder = builder
        .client_info(name, host.version.clone())
        .era(era)
        .request_timeout(call_timeout)
        .connect_timeout(connect_timeout)
        .validate_output(false)
        // A tool that runs as a task runs as one, polled by the bridge: the host sees a plain
        // call (and a 2026-07-28 server is told the client takes the tasks extension).
        .tasks(mcp_runtime::TaskOptions::new());
    if era == mcp_runtime::EraMode::Modern {
        // No fallback to wait for: a server that starts slowly (an interpreter importing a
        // framework) gets the whole connect bound to answer `server/discover`.
        builder.probe_timeout(connect_timeout)
    } else {
        builder
    }
}

/// `--listen ADDR`: the Streamable HTTP front until a signal; each host session gets its own
/// upstream client, made from the same flags.
async fn listen(
    g: &Global,
    args: &BridgeArgs,
    addr: std::net::SocketAddr,
    options: BridgeOptions,
    interrupt: &Interrupt,
) -> Result<(), CliError> {
    let (g2, args2) = (g.clone(), args.clone());
    let era = g.era().mode();
    let make: MakeUpstreams = std::sync::Arc::new(move |host: &HostInfo| {
        // The flags were checked before serving: they make a builder (a connector that
        // fails to connect, naming why, if that ever changed).
        let builder = upstream(&g2, &args2).map(|(b, _)| b).unwrap_or_else(|e| {
            let why = e.to_string();
            ClientBuilder::new(mcp_runtime::transport::StreamConnector::from_fn(
                move || {
                    let why = why.clone();
                    async move {
                        Err::<(tokio::io::Empty, tokio::io::Sink), _>(std::io::Error::other(why))
                    }
                },
            ))
        });
        let built = settle(builder, host, era, g2.connect_timeout, args2.call_timeout);
        Upstream::Client(Box::new(built))
    });
    serve_http(addr, args, make, options, interrupt).await
}

/// Serves the Streamable HTTP front on `addr` until a signal.
async fn serve_http(
    addr: std::net::SocketAddr,
    args: &BridgeArgs,
    make: MakeUpstreams,
    options: BridgeOptions,
    interrupt: &Interrupt,
) -> Result<(), CliError> {
    let token = token(args)?;
    if token.is_none() && !addr.ip().is_loopback() {
        return Err(CliError::usage(
            "--listen",
            format!(
                "{addr} is not a loopback address: give a bearer token with --token-file FILE \
                 or MCPC_BRIDGE_TOKEN"
            ),
        ));
    }
    let mut http = HttpOptions::default();
    http.token = token;
    http.allowed_origins = args.allow_origins.clone();
    http.allowed_hosts = args.allow_hosts.clone();
    let front = HttpFront::bind(addr, make, options, http)
        .await
        .map_err(|e| CliError::usage("--listen", e.to_string()))?;
    errln!(
        "mcpc bridge: serving MCP (Streamable HTTP) at http://{}/mcp",
        front.local_addr()
    );
    front
        .run(async {
            interrupt.fired().await;
        })
        .await;
    Ok(())
}

/// The bearer token of `--listen`: `--token-file`, else `MCPC_BRIDGE_TOKEN` (trimmed; empty
/// means none).
fn token(args: &BridgeArgs) -> Result<Option<String>, CliError> {
    let text = match &args.token_file {
        Some(path) => std::fs::read_to_string(path).map_err(|e| {
            CliError::usage(
                "--token-file",
                format!("cannot read {}: {e}", path.display()),
            )
        })?,
        None => std::env::var("MCPC_BRIDGE_TOKEN").unwrap_or_default(),
    };
    let token = text.trim().to_owned();
    Ok((!token.is_empty()).then_some(token))
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
