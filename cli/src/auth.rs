//! `mcpc login`, `mcpc logout`, `mcpc auth status`, and the OAuth settings every `--http`
//! and `--sse` command uses: tokens in one owner-only file (`MCPC_TOKEN_STORE`, else
//! `$XDG_CONFIG_HOME/mcpc/tokens.json`, else `~/.config/mcpc/tokens.json`), the user sent to
//! the authorization URL (printed on stderr, and opened in a browser when there is a display)
//! and the redirect taken on a one-shot listener on `127.0.0.1`.
//!
//! A token never reaches stdout, stderr or a log.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_runtime::auth::{FileStore, LoopbackUserAgent, OAuth, TokenStore, Url};
use serde_json::json;

use crate::args::Global;
use crate::error::{CliError, Exit};
use crate::output::print_json;
use crate::signals::Interrupt;

/// How long `login` waits for the user to come back from the authorization server.
const LOGIN_WAIT: Duration = Duration::from_secs(300);

/// Where mcpc keeps registrations and tokens.
pub fn store_path() -> PathBuf {
    if let Some(path) = std::env::var_os("MCPC_TOKEN_STORE").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from("."));
    config.join("mcpc").join("tokens.json")
}

/// mcpc's OAuth settings: the file store, the loopback listener, the browser.
pub fn oauth() -> OAuth {
    let agent = LoopbackUserAgent::new(LOGIN_WAIT, |url| {
        // The URL holds no secret (a state and a PKCE challenge only).
        errln!(
            "mcpc: open this URL to authorize (waiting up to {} s):",
            LOGIN_WAIT.as_secs()
        );
        errln!("  {}", crate::sanitize::clean_line(url.as_str()));
        open_browser(url);
    });
    OAuth::builder(Arc::new(agent))
        .client_name("mcpc")
        .store(Arc::new(FileStore::open(store_path())) as Arc<dyn TokenStore>)
        .build()
}

/// Opens `url` in a browser when the machine has a display (never fails the login).
fn open_browser(url: &Url) {
    let display = ["DISPLAY", "WAYLAND_DISPLAY"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|d| !d.is_empty()));
    let opener = if cfg!(target_os = "macos") {
        Some("open")
    } else if display {
        Some("xdg-open")
    } else {
        None
    };
    if let Some(opener) = opener {
        let _ = std::process::Command::new(opener)
            .arg(url.as_str())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
}

/// The server of a command that needs one over HTTP.
fn endpoint(g: &Global, what: &str) -> Result<Url, CliError> {
    let url = g.http.as_deref().or(g.sse.as_deref()).ok_or_else(|| {
        CliError::usage(
            what,
            "authorization is for HTTP servers: give one with --http URL",
        )
    })?;
    Url::parse(url).map_err(|_| CliError::usage(what, "--http: not a URL"))
}

/// `mcpc --http URL login`: asks the server, authorizes if it wants it, keeps the token.
pub async fn login(g: &Global, interrupt: &Interrupt) -> Result<(), CliError> {
    let url = endpoint(g, "login")?;
    let oauth = oauth();
    let done = tokio::select! {
        biased;
        caught = interrupt.fired() => return Err(CliError::signalled("login", caught)),
        done = oauth.login(&url) => done,
    };
    match done {
        Ok(Some(token)) => {
            if g.json {
                print_json(&status_json(&url, Some(&token)));
            } else {
                outln!(
                    "logged in at {} (issuer {}; scopes: {})",
                    crate::sanitize::clean_line(url.as_str()),
                    crate::sanitize::clean_line(&token.issuer),
                    scopes(&token.scopes)
                );
            }
            Ok(())
        }
        Ok(None) => {
            outln!("the server did not ask for authorization; nothing to do");
            Ok(())
        }
        Err(e) => Err(CliError::new(
            Exit::Connect,
            "login",
            crate::sanitize::clean_line(&e.to_string()),
        )),
    }
}

/// `mcpc --http URL logout`: forgets the server's token (the registration is kept).
pub fn logout(g: &Global) -> Result<(), CliError> {
    let url = endpoint(g, "logout")?;
    let oauth = oauth();
    let had = oauth.token(&url).is_some();
    oauth.forget(&url);
    outln!(
        "{}",
        if had {
            "logged out"
        } else {
            "there was no token for this server"
        }
    );
    Ok(())
}

/// `mcpc --http URL auth status`: issuer, scopes and expiry, never the token.
pub fn status(g: &Global) -> Result<(), CliError> {
    let url = endpoint(g, "auth status")?;
    let token = oauth().token(&url);
    if g.json {
        print_json(&status_json(&url, token.as_ref()));
        return Ok(());
    }
    match token {
        None => outln!("not logged in (mcpc --http URL login)"),
        Some(t) => {
            outln!("server   {}", crate::sanitize::clean_line(url.as_str()));
            outln!("issuer   {}", crate::sanitize::clean_line(&t.issuer));
            outln!("scopes   {}", scopes(&t.scopes));
            outln!("expires  {}", expiry(&t));
            outln!(
                "refresh  {}",
                if t.refresh_token.is_some() {
                    "yes"
                } else {
                    "no"
                }
            );
        }
    }
    Ok(())
}

fn scopes(s: &[String]) -> String {
    if s.is_empty() {
        "(none)".into()
    } else {
        crate::sanitize::clean_line(&s.join(" "))
    }
}

fn expiry(t: &mcp_runtime::auth::Token) -> String {
    match t.expires_in(SystemTime::now()) {
        None => "unknown".into(),
        Some(d) if d.is_zero() => "expired".into(),
        Some(d) => format!("in {} s", d.as_secs()),
    }
}

fn status_json(url: &Url, token: Option<&mcp_runtime::auth::Token>) -> serde_json::Value {
    match token {
        None => json!({"server": url.as_str(), "loggedIn": false}),
        Some(t) => json!({
            "server": url.as_str(),
            "loggedIn": true,
            "issuer": t.issuer,
            "scopes": t.scopes,
            "expiresAt": t.expires_at,
            "refreshable": t.refresh_token.is_some(),
        }),
    }
}
