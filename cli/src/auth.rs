//! `mcpc login`, `mcpc logout`, `mcpc auth status`, and the OAuth settings every `--http`
//! and `--sse` command uses: tokens in one owner-only file (`MCPC_TOKEN_STORE`, else
//! `$XDG_CONFIG_HOME/mcpc/tokens.json`, else `~/.config/mcpc/tokens.json`), the user sent to
//! the authorization URL (printed on stderr, and opened in a browser when there is a display)
//! and the redirect taken on a one-shot listener on `127.0.0.1`.
//!
//! A browser login starts only in `mcpc login`, or, in another command, on a terminal after
//! the user said yes to a prompt naming the authorization server's host. A command run
//! without a terminal that meets a server asking for a new authorization fails at once
//! (exit 6) with one line saying to run `mcpc --http URL login`; a stored token is still
//! refreshed silently. Only `https` URLs (`http` only to a loopback host) are ever opened.
//!
//! A token never reaches stdout, stderr or a log.

use std::sync::atomic::{AtomicBool, Ordering};

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use mcp_runtime::auth::flow::AuthFuture;
use mcp_runtime::auth::{
    AuthError, FileStore, LoopbackUserAgent, OAuth, TokenStore, Url, UserAgent,
};
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

/// Set when a command met a server that asks for a new authorization and no person could be
/// asked (no terminal, or the user said no): the command then ends with [`needs_login`].
static LOGIN_NEEDED: AtomicBool = AtomicBool::new(false);

/// Whether this run met a server that needs a login it could not do.
pub fn login_needed() -> bool {
    LOGIN_NEEDED.load(Ordering::Relaxed)
}

/// The one line a command ends with when the server needs a login it could not do here.
pub fn needs_login(g: &Global) -> CliError {
    let (flag, url) = match (g.http.as_deref(), g.sse.as_deref()) {
        (Some(url), _) => ("--http", url),
        (None, Some(url)) => ("--sse", url),
        (None, None) => ("--http", "URL"),
    };
    CliError::new(
        Exit::Login,
        "authorization",
        format!(
            "the server needs a login: run `mcpc {flag} {} login`",
            crate::sanitize::redact_url(url)
        ),
    )
}

/// mcpc's OAuth settings for `mcpc login`: the file store, the loopback listener, the
/// browser, a wait of [`LOGIN_WAIT`] for the user; each exchange with the authorization
/// server within `bound` (`--connect-timeout`, at most 30 s).
pub fn oauth(bound: Duration) -> OAuth {
    settings(Arc::new(loopback(LOGIN_WAIT)), bound)
}

/// mcpc's OAuth settings for every other command: a stored token is used and refreshed; a new
/// authorization happens only on a terminal, after the user agreed, waiting at most `wait`
/// (the connect bound) for the redirect.
pub fn oauth_for_commands(wait: Duration) -> OAuth {
    settings(
        Arc::new(CommandAgent {
            loopback: loopback(wait),
            terminal: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
        }),
        wait,
    )
}

/// The OAuth settings of `mcpc bridge`: a stored token is used and refreshed (before it
/// expires, and when the server refuses it); a new authorization opens the login page in a
/// browser only when `browser` (`--allow-browser-login`) and the page is `https`, without a
/// prompt (the host owns the terminal, if any). Otherwise the call fails at once.
pub fn oauth_for_bridge(wait: Duration, browser: bool) -> OAuth {
    settings(
        Arc::new(BridgeAgent {
            loopback: loopback(wait),
            browser,
        }),
        wait,
    )
}

/// The user agent of `mcpc bridge` (see [`oauth_for_bridge`]).
struct BridgeAgent {
    loopback: LoopbackUserAgent,
    browser: bool,
}

impl UserAgent for BridgeAgent {
    fn redirect_uri(&self) -> AuthFuture<'_, String> {
        self.loopback.redirect_uri()
    }

    fn authorize(&self, url: Url) -> AuthFuture<'_, Url> {
        if url.scheme() != "https" {
            return Box::pin(async move {
                Err(AuthError::InteractionRequired {
                    endpoint: mcp_runtime::auth::policy::redact(&url),
                    reason: "the bridge opens only https login pages".into(),
                })
            });
        }
        self.loopback.authorize(url)
    }

    fn interactive(&self) -> bool {
        if !self.browser {
            LOGIN_NEEDED.store(true, Ordering::Relaxed);
        }
        self.browser
    }

    fn approve<'a>(&'a self, _endpoint: &'a Url, _issuer: &'a Url) -> AuthFuture<'a, ()> {
        // `--allow-browser-login` is the consent.
        Box::pin(async { Ok(()) })
    }
}

fn settings(agent: Arc<dyn UserAgent>, bound: Duration) -> OAuth {
    OAuth::builder(agent)
        .client_name("mcpc")
        .http_timeout(bound.min(Duration::from_secs(30)))
        .store(Arc::new(FileStore::open(store_path())) as Arc<dyn TokenStore>)
        .build()
}

/// The loopback listener that prints the authorization URL, opens it, and waits `wait`.
fn loopback(wait: Duration) -> LoopbackUserAgent {
    LoopbackUserAgent::new(wait, move |url| {
        // The URL holds no secret (a state and a PKCE challenge only).
        errln!(
            "mcpc: open this URL to authorize (waiting up to {} s):",
            wait.as_secs()
        );
        errln!("  {}", crate::sanitize::clean_line(url.as_str()));
        open_browser(url);
    })
}

/// The user agent of commands other than `login`: asks on the terminal before a browser
/// login, and says it cannot involve a person without one.
struct CommandAgent {
    loopback: LoopbackUserAgent,
    terminal: bool,
}

impl UserAgent for CommandAgent {
    fn redirect_uri(&self) -> AuthFuture<'_, String> {
        self.loopback.redirect_uri()
    }

    fn authorize(&self, url: Url) -> AuthFuture<'_, Url> {
        self.loopback.authorize(url)
    }

    fn interactive(&self) -> bool {
        if !self.terminal {
            LOGIN_NEEDED.store(true, Ordering::Relaxed);
        }
        self.terminal
    }

    fn approve<'a>(&'a self, endpoint: &'a Url, issuer: &'a Url) -> AuthFuture<'a, ()> {
        Box::pin(async move {
            let question = format!(
                "mcpc: {} asks you to log in at {}. Open the login page in a browser? [y/N] ",
                crate::sanitize::clean_line(endpoint.host_str().unwrap_or("the server")),
                crate::sanitize::clean_line(
                    issuer.host_str().unwrap_or("its authorization server")
                ),
            );
            let yes = self.terminal
                && tokio::task::spawn_blocking(move || {
                    use std::io::Write;
                    let mut err = std::io::stderr();
                    let _ = write!(err, "{question}");
                    let _ = err.flush();
                    let mut answer = String::new();
                    std::io::stdin().read_line(&mut answer).is_ok()
                        && matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES")
                })
                .await
                .unwrap_or(false);
            if yes {
                Ok(())
            } else {
                LOGIN_NEEDED.store(true, Ordering::Relaxed);
                Err(AuthError::InteractionRequired {
                    endpoint: mcp_runtime::auth::policy::redact(endpoint),
                    reason: "the user did not agree to log in".into(),
                })
            }
        })
    }
}

/// Opens `url` in a browser when the machine has a display (never fails the login). Only an
/// `https` URL, or an `http` one to a loopback host, is ever handed to the opener.
fn open_browser(url: &Url) {
    if mcp_runtime::auth::policy::check_scheme(url).is_err() {
        errln!("mcpc: not opening that URL in a browser: only https URLs are opened");
        return;
    }
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
    let oauth = oauth(g.connect_timeout);
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
    let oauth = oauth(g.connect_timeout);
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
    let token = oauth(g.connect_timeout).token(&url);
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
