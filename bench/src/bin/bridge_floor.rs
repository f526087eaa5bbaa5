//! The floor of a bridge (`scripts/bench-bridge`): a process between the host and the server
//! that relays bytes and knows no MCP, so that what any bridge adds can be set against what one
//! more process in the path costs on this machine.
//!
//! - `bridge_floor -- CMD ARGS...`: starts CMD and relays lines, the host's stdin to CMD's
//!   stdin and CMD's stdout to the host's stdout, on two blocking threads, each flushing only
//!   when no more input is buffered (as the raw echo server does).
//! - `bridge_floor --http URL`: POSTs each line of stdin to URL (Streamable HTTP, the server
//!   answering with JSON bodies: the test server's `--json`) and writes each answer's body as
//!   a line to stdout; the first POST's `mcp-session-id` goes with every later one. One tokio
//!   thread, stdin and stdout as non-blocking pipes in its reactor, one task per POST.
//!
//! Not a bridge: no id mapping, no validation, no lifecycle (the host's `initialize` must be
//! answered before it sends anything else, as a handshake-era host does); SSE answers are not
//! read. Ends when stdin closes.

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::os::fd::AsFd;
use std::process::{Command, ExitCode, Stdio};
use std::rc::Rc;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;

/// Copies lines from `from` to `to`, flushing when `from` has nothing more buffered.
fn relay(from: impl Read, mut to: impl Write) {
    let mut from = BufReader::with_capacity(1 << 16, from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match from.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if to.write_all(&line).is_err() {
            break;
        }
        if from.buffer().is_empty() && to.flush().is_err() {
            break;
        }
    }
    let _ = to.flush();
}

fn stdio(cmd: &[String]) -> ExitCode {
    let mut child = match Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("bridge_floor: cannot start {}: {e}", cmd[0]);
            return ExitCode::from(2);
        }
    };
    let (Some(to_server), Some(from_server)) = (child.stdin.take(), child.stdout.take()) else {
        return ExitCode::from(2);
    };
    let up = std::thread::spawn(move || relay(std::io::stdin().lock(), to_server));
    let down = std::thread::spawn(move || {
        relay(
            from_server,
            BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
        );
    });
    let _ = up.join();
    let _ = child.wait();
    let _ = down.join();
    ExitCode::SUCCESS
}

/// One POST: the body of its answer, if it has one (a notification's has none).
async fn post(http: &reqwest::Client, url: &str, session: &str, line: Vec<u8>) -> Option<Vec<u8>> {
    let mut request = http
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(line);
    if !session.is_empty() {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let response = request.send().await.ok()?;
    // 202 Accepted (a notification, or a response of the host's) carries no message.
    let accepted = response.status() == reqwest::StatusCode::ACCEPTED;
    let body = response.bytes().await.ok()?;
    if accepted { None } else { line_of(&body) }
}

/// An answer's body as one line (its own line end dropped); `None` when empty.
fn line_of(body: &[u8]) -> Option<Vec<u8>> {
    let body = body.trim_ascii_end();
    (!body.is_empty()).then(|| body.to_vec())
}

async fn http(url: String) -> ExitCode {
    let input = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Receiver::from_owned_fd);
    let output = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .and_then(pipe::Sender::from_owned_fd);
    let (input, output) = match (input, output) {
        (Ok(i), Ok(o)) => (i, o),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("bridge_floor: stdin and stdout must be pipes: {e}");
            return ExitCode::from(2);
        }
    };
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::task::spawn_local(async move {
        let mut output = tokio::io::BufWriter::with_capacity(1 << 16, output);
        while let Some(body) = out_rx.recv().await {
            let mut next = Some(body);
            while let Some(body) = next {
                if output.write_all(&body).await.is_err() || output.write_all(b"\n").await.is_err()
                {
                    return;
                }
                next = out_rx.try_recv().ok();
            }
            if output.flush().await.is_err() {
                return;
            }
        }
    });
    let http = reqwest::Client::new();
    let url: Rc<str> = url.into();
    let mut lines = tokio::io::BufReader::with_capacity(1 << 16, input).split(b'\n');
    // The first line (the host's `initialize`) opens the session: its answer is awaited.
    let mut session: Rc<str> = "".into();
    while let Ok(Some(line)) = lines.next_segment().await {
        if session.is_empty() {
            let response = http
                .post(&*url)
                .header("accept", "application/json, text/event-stream")
                .header("content-type", "application/json")
                .body(line)
                .send()
                .await;
            let Ok(response) = response else {
                eprintln!("bridge_floor: the server did not answer initialize");
                return ExitCode::from(1);
            };
            session = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .into();
            if let Some(body) = response.bytes().await.ok().and_then(|b| line_of(&b)) {
                let _ = out_tx.send(body);
            }
            continue;
        }
        let (http, url, session, out) = (
            http.clone(),
            Rc::clone(&url),
            Rc::clone(&session),
            out_tx.clone(),
        );
        tokio::task::spawn_local(async move {
            if let Some(body) = post(&http, &url, &session, line).await {
                let _ = out.send(body);
            }
        });
    }
    drop(out_tx);
    let _ = writer.await;
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--") if args.len() > 1 => stdio(&args[1..]),
        Some("--http") if args.len() == 2 => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            let local = tokio::task::LocalSet::new();
            local.block_on(&runtime, http(args[1].clone()))
        }
        _ => {
            eprintln!("usage: bridge_floor -- CMD ARGS... | bridge_floor --http URL");
            ExitCode::from(2)
        }
    }
}
