//! Stdio transport against small `python3` / `sh` child servers.

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use mcp_runtime::transport::{
    self, Connector, SendOutcome, StdioConnector, StdioConnectorBuilder, TransportConfig,
    TransportError, TransportEvent, TransportHandle,
};
use tokio::sync::mpsc;
use tokio::time::{Instant, timeout};

/// A line-echo server: every line read from stdin is written back to stdout.
const PY_ECHO: &str =
    "import sys\nfor line in sys.stdin:\n    sys.stdout.write(line)\n    sys.stdout.flush()\n";

fn sh(script: &str) -> StdioConnector {
    StdioConnector::builder("sh")
        .arg("-c")
        .arg(script)
        .grace(Duration::from_millis(200))
        .build()
}

/// Reads `{"pid":N,...}`-style frames written by the test scripts.
fn field(frame: &[u8], key: &str) -> u32 {
    let s = std::str::from_utf8(frame).unwrap();
    let start = s
        .find(&format!("\"{key}\":"))
        .unwrap_or_else(|| panic!("no {key} in {s}"))
        + key.len()
        + 3;
    s[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap()
}

/// A child that says its pid and then sleeps: its transport is up and the pid is read.
async fn sleeping_child() -> (TransportHandle, Events, u32) {
    let (handle, mut rx) = start(
        Arc::new(sh(r#"echo "{\"pid\":$$}"; exec sleep 30"#)),
        1,
        small(),
    );
    expect_up(&mut rx).await;
    handle.grant_credit();
    let pid = field(&expect_frame(&mut rx).await, "pid");
    (handle, rx, pid)
}

fn proc_state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next())
}

/// Waits until `pid` no longer exists (reaped). With `allow_zombie`, a zombie counts as dead
/// (for grandchildren whose reaping belongs to init, not to us).
async fn wait_dead(pid: u32, allow_zombie: bool) {
    let deadline = Instant::now() + WAIT;
    loop {
        match proc_state(pid) {
            None => return,
            Some('Z') if allow_zombie => return,
            state => assert!(
                Instant::now() < deadline,
                "pid {pid} still there (state {state:?})"
            ),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Log capture for one test. A single global subscriber writes into the buffer of the thread
/// that emits the event; `#[tokio::test]` runs each test and all its tasks on one thread.
/// (A per-thread `set_default` subscriber is not enough: callsite interest is cached globally
/// and can be computed on another test's thread, which has no subscriber.)
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

thread_local! {
    static CAPTURE: std::cell::RefCell<Option<Captured>> = const { std::cell::RefCell::new(None) };
}

struct ThreadWriter;

impl Write for ThreadWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        CAPTURE.with(|c| {
            if let Some(c) = &*c.borrow() {
                c.0.lock().unwrap().extend_from_slice(buf);
            }
        });
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn install() -> Self {
        static GLOBAL: std::sync::Once = std::sync::Once::new();
        GLOBAL.call_once(|| {
            let subscriber = tracing_subscriber::fmt()
                .with_max_level(tracing::Level::DEBUG)
                .with_ansi(false)
                .with_writer(|| ThreadWriter)
                .finish();
            tracing::subscriber::set_global_default(subscriber)
                .expect("no other global subscriber");
        });
        let captured = Self::default();
        CAPTURE.with(|c| *c.borrow_mut() = Some(captured.clone()));
        captured
    }
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[tokio::test]
async fn echo_round_trip_and_orderly_close() {
    let connector = StdioConnector::builder("python3")
        .args(["-u", "-c", PY_ECHO])
        .build();
    assert!(connector.describe().starts_with("stdio: python3 -u -c"));
    let (handle, mut rx) = start(Arc::new(connector), 7, small());
    assert_eq!(handle.generation(), 7);
    assert_eq!(next(&mut rx).await.0, 7);
    for i in 0..3 {
        assert_eq!(
            handle.try_send(format!("{{\"n\":{i}}}").into_bytes()),
            SendOutcome::Ok
        );
    }
    for i in 0..3 {
        handle.grant_credit();
        let (r#gen, event) = next(&mut rx).await;
        assert_eq!(r#gen, 7);
        match event {
            TransportEvent::Frame(f) => assert_eq!(f, format!("{{\"n\":{i}}}").into_bytes()),
            other => panic!("expected frame, got {other:?}"),
        }
    }
    // A cooperative server exits on stdin EOF, well before the 2 s grace.
    let started = Instant::now();
    handle.close();
    handle.close();
    assert_eq!(handle.try_send(b"{}".to_vec()), SendOutcome::Failed);
    assert!(matches!(expect_down(&mut rx).await, TransportError::Closed));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "close took {:?}",
        started.elapsed()
    );
    timeout(WAIT, async {
        while !handle.is_finished() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .unwrap();
    assert!(rx.recv().await.is_none(), "nothing after Down");
}

#[tokio::test]
async fn frames_queued_before_close_are_flushed() {
    // The child copies stdin to a file, so the flush is checked after the child has exited.
    let dir = std::env::temp_dir().join(format!("mcp-rt-flush-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("out.txt");
    let connector = StdioConnector::builder("sh")
        .arg("-c")
        .arg("cat > out.txt")
        .current_dir(&dir)
        .build();
    let (handle, mut rx) = start(Arc::new(connector), 1, small());
    expect_up(&mut rx).await;
    for i in 0..5 {
        assert_eq!(
            handle.try_send(format!("{{\"n\":{i}}}").into_bytes()),
            SendOutcome::Ok
        );
    }
    handle.close();
    assert!(matches!(expect_down(&mut rx).await, TransportError::Closed));
    let written = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        written,
        "{\"n\":0}\n{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn env_and_env_clear_reach_the_child() {
    let connector = StdioConnector::builder("/bin/sh")
        .arg("-c")
        .arg(r#"echo "{\"foo\":\"$FOO\",\"home\":\"$HOME\"}"; cat >/dev/null"#)
        .env("FOO", "bar")
        .env_clear()
        .build();
    let (handle, mut rx) = start(Arc::new(connector), 1, small());
    expect_up(&mut rx).await;
    handle.grant_credit();
    assert_eq!(
        expect_frame(&mut rx).await,
        br#"{"foo":"bar","home":""}"#.to_vec()
    );
    handle.close();
    assert!(matches!(expect_down(&mut rx).await, TransportError::Closed));
}

#[tokio::test]
async fn frames_are_delivered_only_against_credit() {
    let script = "import sys\nfor i in range(3):\n    print('{\"n\":%d}' % i, flush=True)\nsys.stdin.read()\n";
    let connector = StdioConnector::builder("python3")
        .args(["-c", script])
        .build();
    let (handle, mut rx) = start(Arc::new(connector), 1, small());
    expect_up(&mut rx).await;
    // The child has written all three lines by now, but nothing is read without credit.
    assert!(
        timeout(Duration::from_millis(300), rx.recv())
            .await
            .is_err(),
        "frame without credit"
    );
    handle.grant_credit();
    assert_eq!(expect_frame(&mut rx).await, b"{\"n\":0}".to_vec());
    assert!(
        timeout(Duration::from_millis(100), rx.recv())
            .await
            .is_err(),
        "second frame on one credit"
    );
    handle.grant_credit();
    handle.grant_credit();
    assert_eq!(expect_frame(&mut rx).await, b"{\"n\":1}".to_vec());
    assert_eq!(expect_frame(&mut rx).await, b"{\"n\":2}".to_vec());
    handle.close();
    assert!(matches!(expect_down(&mut rx).await, TransportError::Closed));
}

#[tokio::test]
async fn oversized_line_from_child_is_rejected_then_down() {
    let script = "import sys\nsys.stdout.write('x' * (17 * 1024 * 1024) + '\\n')\nsys.stdout.flush()\nsys.stdin.read()\n";
    let connector = StdioConnector::builder("python3")
        .args(["-c", script])
        .grace(Duration::from_millis(200))
        .build();
    let (handle, mut rx) = start(Arc::new(connector), 1, TransportConfig::default());
    expect_up(&mut rx).await;
    handle.grant_credit();
    match next(&mut rx).await {
        (_, TransportEvent::Oversized { seen }) => assert!(seen > 16 * 1024 * 1024, "seen {seen}"),
        (_, other) => panic!("expected Oversized, got {other:?}"),
    }
    match expect_down(&mut rx).await {
        TransportError::Oversized { seen, max } => {
            assert_eq!(max, 16 * 1024 * 1024);
            assert!(seen > max);
        }
        other => panic!("expected Down(Oversized), got {other:?}"),
    }
}

#[tokio::test]
async fn child_exiting_by_itself_reports_its_exit_code() {
    let (handle, mut rx) = start(Arc::new(sh(r#"echo '{"bye":1}'; exit 3"#)), 1, small());
    handle.grant_credit();
    handle.grant_credit();
    expect_up(&mut rx).await;
    assert_eq!(expect_frame(&mut rx).await, br#"{"bye":1}"#.to_vec());
    match expect_down(&mut rx).await {
        TransportError::ChildExited { code, signal } => {
            assert_eq!(code, Some(3));
            assert_eq!(signal, None);
        }
        other => panic!("expected ChildExited, got {other:?}"),
    }
    let msg = TransportError::ChildExited {
        code: Some(3),
        signal: None,
    }
    .to_string();
    assert_eq!(msg, "server process exited (exit code 3)");
}

#[tokio::test]
async fn child_exit_is_noticed_without_credit() {
    let (_handle, mut rx) = start(Arc::new(sh("exit 5")), 1, small());
    expect_up(&mut rx).await;
    match expect_down(&mut rx).await {
        TransportError::ChildExited { code: Some(5), .. } => {}
        other => panic!("expected ChildExited(5), got {other:?}"),
    }
}

#[tokio::test]
async fn close_escalates_to_sigkill_for_a_stubborn_child_and_reaps_it() {
    let log = Captured::install();
    // Ignores SIGTERM (inherited by the background sleep) and never reads stdin.
    let script = r#"trap "" TERM; sleep 30 & echo "{\"pid\":$$,\"sleep\":$!}"; wait; wait"#;
    let (handle, mut rx) = start(Arc::new(sh(script)), 1, small());
    expect_up(&mut rx).await;
    handle.grant_credit();
    let frame = expect_frame(&mut rx).await;
    let (pid, sleep_pid) = (field(&frame, "pid"), field(&frame, "sleep"));
    assert!(proc_state(pid).is_some() && proc_state(sleep_pid).is_some());

    let started = Instant::now();
    handle.close();
    assert!(matches!(expect_down(&mut rx).await, TransportError::Closed));
    let took = started.elapsed();
    // stdin closed → 200 ms → SIGTERM (ignored) → 200 ms → SIGKILL.
    assert!(
        took >= Duration::from_millis(400),
        "closed after {took:?}, before the grace periods"
    );
    assert!(took < Duration::from_secs(3), "close took {took:?}");
    // Reaped before Down was sent: no zombie left behind.
    assert_eq!(proc_state(pid), None, "server pid {pid} still present");
    wait_dead(sleep_pid, true).await;
    let text = log.text();
    // The reaped status says SIGKILL ended it (SIGTERM was ignored).
    assert!(
        text.contains("server process reaped") && text.contains("signal: 9"),
        "no SIGKILL death in log:\n{text}"
    );
}

#[tokio::test]
async fn dropping_the_handle_kills_and_reaps_the_child() {
    let (handle, mut rx, pid) = sleeping_child().await;
    assert!(proc_state(pid).is_some());
    drop(handle);
    // The generation still ends with exactly one Down.
    assert!(matches!(expect_down(&mut rx).await, TransportError::Closed));
    wait_dead(pid, false).await;
    assert!(rx.recv().await.is_none());
}

#[tokio::test]
async fn stderr_lines_reach_tracing_truncated() {
    let log = Captured::install();
    let script = "import sys\nsys.stderr.write('hello from stderr\\n')\nsys.stderr.write('y' * 20000 + '\\n')\nsys.stderr.flush()\n";
    let connector = StdioConnector::builder("python3")
        .args(["-c", script])
        .build();
    let (handle, mut rx) = start(Arc::new(connector), 1, small());
    handle.grant_credit();
    expect_up(&mut rx).await;
    assert!(matches!(
        expect_down(&mut rx).await,
        TransportError::ChildExited { code: Some(0), .. }
    ));
    let text = log.text();
    let line = text
        .lines()
        .find(|l| l.contains("server_stderr") && l.contains("hello from stderr"))
        .unwrap_or_else(|| panic!("not logged:\n{text}"));
    assert!(line.contains("mcp_runtime::server_stderr"), "{line}");
    assert!(line.contains("pid="), "{line}");
    let long = text
        .lines()
        .find(|l| l.contains("server_stderr") && l.contains("yyyy"))
        .expect("long line logged");
    assert!(long.contains("truncated=true"), "{long}");
    let ys = long.chars().filter(|&c| c == 'y').count();
    assert!(
        (8 * 1024..9 * 1024).contains(&ys),
        "{ys} bytes of the long line logged"
    );
}

#[tokio::test]
async fn stderr_flood_is_rate_limited() {
    let log = Captured::install();
    let script = "import sys\nfor i in range(5000):\n    sys.stderr.write('flood %d\\n' % i)\nsys.stderr.flush()\n";
    let connector = StdioConnector::builder("python3")
        .args(["-c", script])
        .build();
    let (handle, mut rx) = start(Arc::new(connector), 1, small());
    handle.grant_credit();
    expect_up(&mut rx).await;
    assert!(matches!(
        expect_down(&mut rx).await,
        TransportError::ChildExited { .. }
    ));
    let text = log.text();
    let logged = text
        .lines()
        .filter(|l| l.contains("server_stderr") && l.contains("line=flood "))
        .count();
    assert!((1000..4000).contains(&logged), "{logged} lines logged");
    assert!(text.contains("suppressed"), "no suppression event");
}

#[tokio::test]
async fn full_queue_reports_busy() {
    // The child never reads stdin: the pipe fills, the writer blocks, then the queue fills.
    let config = TransportConfig {
        max_frame_bytes: 1024,
        send_queue: 2,
    };
    let (handle, mut rx) = start(Arc::new(sh("exec sleep 30")), 1, config);
    expect_up(&mut rx).await;
    let frame = vec![b'x'; 64 * 1024];
    let mut busy = false;
    for _ in 0..500 {
        match handle.try_send(frame.clone()) {
            SendOutcome::Ok => tokio::time::sleep(Duration::from_millis(2)).await,
            SendOutcome::Busy => {
                busy = true;
                break;
            }
            SendOutcome::Failed => panic!("send failed"),
        }
    }
    assert!(busy, "queue never reported Busy");
    // Close still completes: the flush is bounded by the grace period.
    handle.close();
    assert!(matches!(expect_down(&mut rx).await, TransportError::Closed));
}

#[tokio::test]
async fn spawn_error_is_reported_as_down() {
    let connector = StdioConnector::builder("/nonexistent/mcp-server-does-not-exist").build();
    let (handle, mut rx) = start(Arc::new(connector), 3, small());
    match next(&mut rx).await {
        (3, TransportEvent::Down(TransportError::Spawn(e))) => {
            assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        }
        (g, other) => panic!("expected Down(Spawn) for gen 3, got gen {g} {other:?}"),
    }
    assert_eq!(handle.try_send(b"{}".to_vec()), SendOutcome::Failed);
}

#[tokio::test]
async fn each_generation_spawns_its_own_process() {
    let connector: Arc<dyn Connector> = Arc::new(
        StdioConnector::builder("python3")
            .args(["-u", "-c", PY_ECHO])
            .build(),
    );
    let (tx, mut rx) = mpsc::unbounded_channel();
    let one = transport::spawn(Arc::clone(&connector), 1, small(), tx.clone());
    let two = transport::spawn(Arc::clone(&connector), 2, small(), tx);
    let mut up = [false; 2];
    for _ in 0..2 {
        match next(&mut rx).await {
            (g, TransportEvent::Up) => up[g as usize - 1] = true,
            (g, other) => panic!("gen {g}: {other:?}"),
        }
    }
    assert_eq!(up, [true, true]);
    one.close();
    assert!(matches!(
        next(&mut rx).await,
        (1, TransportEvent::Down(TransportError::Closed))
    ));
    assert_eq!(two.try_send(b"{\"gen\":2}".to_vec()), SendOutcome::Ok);
    two.grant_credit();
    match next(&mut rx).await {
        (2, TransportEvent::Frame(f)) => assert_eq!(f, b"{\"gen\":2}".to_vec()),
        (g, other) => panic!("gen {g}: {other:?}"),
    }
    two.close();
    assert!(matches!(
        next(&mut rx).await,
        (2, TransportEvent::Down(TransportError::Closed))
    ));
}

/// The names of the variables a child saw, from a frame `{"names":"A B C "}`.
async fn child_env_names(connector: StdioConnector) -> Vec<String> {
    let (handle, mut rx) = start(Arc::new(connector), 1, small());
    expect_up(&mut rx).await;
    handle.grant_credit();
    let frame = String::from_utf8(expect_frame(&mut rx).await).unwrap();
    handle.close();
    let names = frame
        .strip_prefix("{\"names\":\"")
        .and_then(|s| s.strip_suffix("\"}"))
        .unwrap_or_else(|| panic!("unexpected frame {frame}"));
    names.split_whitespace().map(str::to_owned).collect()
}

fn env_script() -> StdioConnectorBuilder {
    StdioConnector::builder("/bin/sh")
        .arg("-c")
        .arg(r#"printf '{"names":"%s"}\n' "$(env | cut -d= -f1 | tr '\n' ' ')"; cat >/dev/null"#)
}

#[tokio::test]
async fn the_child_inherits_only_the_allowlist_unless_asked() {
    // A variable of this process that is not on the list (cargo sets these for tests).
    let host = std::env::vars()
        .map(|(k, _)| k)
        .find(|k| {
            !StdioConnector::DEFAULT_INHERITED_ENV.contains(&k.as_str()) && k.starts_with("CARGO")
        })
        .expect("cargo sets CARGO_* variables for tests");
    let names = child_env_names(env_script().env("MCP_GIVEN", "1").build()).await;
    assert!(names.contains(&"MCP_GIVEN".to_owned()), "{names:?}");
    assert!(names.contains(&"PATH".to_owned()), "{names:?}");
    if std::env::var_os("HOME").is_some() {
        assert!(names.contains(&"HOME".to_owned()), "{names:?}");
    }
    assert!(!names.contains(&host), "{host} leaked: {names:?}");
    assert!(
        names.iter().all(
            |n| StdioConnector::DEFAULT_INHERITED_ENV.contains(&n.as_str())
                || ["MCP_GIVEN", "PWD", "SHLVL", "_", "OLDPWD"].contains(&n.as_str())
        ),
        "{names:?}"
    );
    // Opt in to everything.
    let names = child_env_names(env_script().inherit_env().build()).await;
    assert!(names.contains(&host), "{names:?}");
    // Nothing at all.
    let names = child_env_names(env_script().env_clear().env("MCP_GIVEN", "1").build()).await;
    assert!(!names.contains(&"PATH".to_owned()), "{names:?}");
    assert!(names.contains(&"MCP_GIVEN".to_owned()), "{names:?}");
}

/// The helper of the next test; does something only in the process that test starts, where no
/// other test's runtime spawns or reaps children (tokio's orphan queue is process-wide).
#[test]
fn reap_helper_runtime_shutdown() {
    if std::env::var_os("MCP_REAP_HELPER").is_none() {
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (handle, rx, pid) = rt.block_on(sleeping_child());
    assert_eq!(proc_state(pid).map(|s| s != 'Z'), Some(true));
    // The transport task is dropped while the runtime shuts down: kill_now must still reap.
    drop(rt);
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    while let Some(state) = proc_state(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "pid {pid} left behind in state {state}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    drop((handle, rx));
    println!("REAPED {pid}");
}

#[test]
fn a_child_killed_while_the_runtime_shuts_down_is_reaped() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "reap_helper_runtime_shutdown",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("MCP_REAP_HELPER", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("REAPED "),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
