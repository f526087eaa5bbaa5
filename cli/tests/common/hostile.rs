//! The harness of the hostile HTTP matrix (`hostile_matrix.rs`): the in-repo test server with
//! a fault ([`mcp_testserver::http::Fault`]) running in this process on its own thread, so
//! that a test can read what its origins saw; `mcpc` runs watched for its time, its peak
//! resident size and what it printed; a sandbox (token store, a fake `xdg-open` that records
//! what mcpc tried to open, a display) per run; and a test "browser" for the grant flows.
//!
//! Nothing here judges: the checks are the test file's.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use mcp_testserver::http::{Fault, HttpConfig, Origin, RequestLog, Seen};
use mcp_testserver::{Era as ServerEra, ServerConfig};

/// The binary under test: `MCPC_TEST_BIN` when set (a copy of a given build: a target
/// directory shared by several checkouts may hold another one's `mcpc` by the time the
/// tests run), else the one cargo built.
pub fn mcpc_bin() -> String {
    std::env::var("MCPC_TEST_BIN")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_mcpc").to_owned())
}

/// The protocol era mcpc is told to speak (`--era`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// The handshake era (`initialize`, sessions): 2025-11-25.
    Legacy,
    /// The stateless era: 2026-07-28.
    Modern,
}

impl Era {
    /// The value of `--era`.
    pub fn flag(self) -> &'static str {
        match self {
            Era::Legacy => "legacy",
            Era::Modern => "modern",
        }
    }
}

/// A hostile server running on a thread of its own; dropped, it stops.
pub struct Hostile {
    /// The MCP endpoint (`http://IP:PORT/mcp`).
    pub url: String,
    /// The second origin's base URL, when it runs.
    pub other: Option<String>,
    /// What both origins saw.
    pub log: RequestLog,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// How to start a [`Hostile`] server.
#[derive(Debug, Clone)]
pub struct HostileBuilder {
    config: HttpConfig,
    at: IpAddr,
}

impl Hostile {
    /// A server (both eras: `dual`) misbehaving as `fault` on every request it hits.
    pub fn builder(fault: Fault) -> HostileBuilder {
        let mut server = ServerConfig::echo();
        server.era = ServerEra::Dual;
        HostileBuilder {
            config: HttpConfig::new(server).with_fault(fault, None),
            at: IpAddr::from([127, 0, 0, 1]),
        }
    }

    /// A server misbehaving as `fault`, on loopback, with defaults.
    pub fn start(fault: Fault) -> Hostile {
        Self::builder(fault).start()
    }

    /// The requests the main origin saw.
    pub fn main_requests(&self) -> Vec<Seen> {
        self.log.at(Origin::Main)
    }

    /// The requests the other origin saw.
    pub fn other_requests(&self) -> Vec<Seen> {
        self.log.at(Origin::Other)
    }
}

impl HostileBuilder {
    /// The fault hits the first `n` requests only.
    pub fn times(mut self, n: u32) -> Self {
        self.config.fault_times = Some(n);
        self
    }

    /// The main origin listens on `ip` (default loopback).
    pub fn at(mut self, ip: IpAddr) -> Self {
        self.at = ip;
        self
    }

    /// The second origin listens on `addr`.
    pub fn other(mut self, addr: SocketAddr) -> Self {
        self.config.other_origin = Some(addr);
        self
    }

    /// Starts it.
    pub fn start(self) -> Hostile {
        let (ready_tx, ready_rx) = mpsc::channel();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let config = self.config;
        let addr = SocketAddr::new(self.at, 0);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async move {
                let server = mcp_testserver::http::serve(addr, config)
                    .await
                    .expect("the hostile server listens");
                let _ = ready_tx.send((server.url(), server.other_url(), server.log()));
                let _ = stopped.await;
                drop(server);
            });
            rt.shutdown_background();
        });
        let (url, other, log) = ready_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("the hostile server starts");
        Hostile {
            url,
            other,
            log,
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// An address of this machine that is not loopback (the one its default route leaves from),
/// if it has one: to put an origin in another address class than loopback. No packet is sent
/// (a UDP "connect" only picks the route).
pub fn non_loopback_ip() -> Option<IpAddr> {
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.123:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    if ip.is_loopback() || ip.is_unspecified() {
        return None;
    }
    // It must be bindable by a listener too.
    std::net::TcpListener::bind(SocketAddr::new(ip, 0)).ok()?;
    Some(ip)
}

/// A scratch directory per run: mcpc's token store, and a `bin/` first on `PATH` with a fake
/// `xdg-open` that appends what it was asked to open to `opened` (and `DISPLAY` set, so that
/// mcpc would use it).
pub struct Sandbox {
    /// The directory.
    pub dir: PathBuf,
}

static SANDBOXES: AtomicUsize = AtomicUsize::new(0);

impl Sandbox {
    /// A fresh sandbox.
    pub fn new() -> Sandbox {
        let n = SANDBOXES.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("mcpc-hostile-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let bin = dir.join("bin");
        std::fs::create_dir_all(&bin).expect("a sandbox");
        let opened = dir.join("opened");
        for opener in ["xdg-open", "open", "sensible-browser", "x-www-browser"] {
            let path = bin.join(opener);
            std::fs::write(
                &path,
                format!(
                    "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\n",
                    opened.display()
                ),
            )
            .expect("a fake opener");
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
                .expect("an executable fake opener");
        }
        Sandbox { dir }
    }

    /// The token store mcpc uses in this sandbox (in a directory mcpc creates).
    pub fn store(&self) -> PathBuf {
        self.dir.join("store").join("tokens.json")
    }

    /// What mcpc asked the fake opener to open, one line each.
    pub fn opened(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.join("opened"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    fn apply(&self, cmd: &mut Command) {
        let path = std::env::var("PATH").unwrap_or_default();
        cmd.env("PATH", format!("{}:{path}", self.dir.join("bin").display()))
            .env("DISPLAY", ":99")
            .env("MCPC_TOKEN_STORE", self.store())
            .env("XDG_CONFIG_HOME", self.dir.join("config"))
            .env("HOME", &self.dir);
        for proxy in [
            "http_proxy",
            "https_proxy",
            "all_proxy",
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "NO_PROXY",
            "no_proxy",
        ] {
            cmd.env_remove(proxy);
        }
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// What one mcpc run did.
#[derive(Debug)]
pub struct Outcome {
    /// The exit code (`None`: killed at the run's limit, or by a signal).
    pub code: Option<i32>,
    /// stdout, lossy.
    pub stdout: String,
    /// stderr, lossy.
    pub stderr: String,
    /// From the start to the exit (or the kill).
    pub elapsed: Duration,
    /// mcpc's peak resident size (`VmHWM`, its last reading before the exit), KiB.
    pub peak_kib: u64,
    /// It ran past its limit and was killed.
    pub killed: bool,
}

impl Outcome {
    /// stdout and stderr together.
    pub fn output(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

/// What a run calls with each stderr line.
type LineHook<'a> = Box<dyn FnMut(&str) + 'a>;

/// One run of mcpc, watched.
pub struct Run<'a> {
    args: Vec<String>,
    sandbox: &'a Sandbox,
    limit: Duration,
    /// Send SIGINT after this long (`watch`, `state`).
    interrupt_after: Option<Duration>,
    /// Called with each stderr line as it comes (a test "browser").
    on_stderr: Option<LineHook<'a>>,
    /// Called with mcpc's pid once it runs.
    after_spawn: Option<Box<dyn FnOnce(u32) + 'a>>,
}

impl<'a> Run<'a> {
    /// `mcpc ARGS` in `sandbox`, killed if it runs past `limit`.
    pub fn new(sandbox: &'a Sandbox, args: &[&str], limit: Duration) -> Self {
        Run {
            args: args.iter().map(|s| (*s).to_owned()).collect(),
            sandbox,
            limit,
            interrupt_after: None,
            on_stderr: None,
            after_spawn: None,
        }
    }

    /// Calls `f` with mcpc's pid as soon as it is spawned.
    pub fn after_spawn(mut self, f: impl FnOnce(u32) + 'a) -> Self {
        self.after_spawn = Some(Box::new(f));
        self
    }

    /// Interrupts mcpc (SIGINT, Ctrl-C) after `after`.
    pub fn interrupt_after(mut self, after: Duration) -> Self {
        self.interrupt_after = Some(after);
        self
    }

    /// Calls `f` with each line of stderr as it comes.
    pub fn on_stderr(mut self, f: impl FnMut(&str) + 'a) -> Self {
        self.on_stderr = Some(Box::new(f));
        self
    }

    /// Runs mcpc to its end (or its limit).
    pub fn go(mut self) -> Outcome {
        let started = Instant::now();
        let mut cmd = Command::new(mcpc_bin());
        cmd.args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        self.sandbox.apply(&mut cmd);
        let mut child = cmd.spawn().expect("mcpc starts");
        let pid = child.id();
        if let Some(f) = self.after_spawn.take() {
            f(pid);
        }
        let mut out_pipe = child.stdout.take().expect("stdout");
        let out_reader = std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = out_pipe.read_to_end(&mut bytes);
            bytes
        });
        let (tx, lines) = mpsc::channel::<String>();
        let err_pipe = child.stderr.take().expect("stderr");
        let err_reader = std::thread::spawn(move || {
            let mut reader = BufReader::new(err_pipe);
            let mut line = Vec::new();
            while reader.read_until(b'\n', &mut line).unwrap_or(0) > 0 {
                let _ = tx.send(String::from_utf8_lossy(&line).into_owned());
                line.clear();
            }
        });
        let mut stderr = String::new();
        let mut peak_kib = 0;
        let mut interrupted = false;
        let mut killed = false;
        let status = loop {
            if let Some(p) = peak_of(pid) {
                peak_kib = peak_kib.max(p);
            }
            for line in lines.try_iter() {
                if let Some(f) = self.on_stderr.as_mut() {
                    f(line.trim_end());
                }
                stderr.push_str(&line);
            }
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if let Some(after) = self.interrupt_after
                && !interrupted
                && started.elapsed() >= after
            {
                interrupted = true;
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid as i32),
                    nix::sys::signal::Signal::SIGINT,
                );
            }
            if started.elapsed() > self.limit {
                killed = true;
                let _ = child.kill();
                break child.wait().expect("wait");
            }
            std::thread::sleep(Duration::from_millis(3));
        };
        let elapsed = started.elapsed();
        let stdout = String::from_utf8_lossy(&out_reader.join().unwrap_or_default()).into_owned();
        let _ = err_reader.join();
        for line in lines.try_iter() {
            stderr.push_str(&line);
        }
        Outcome {
            code: if killed { None } else { status.code() },
            stdout,
            stderr,
            elapsed,
            peak_kib,
            killed,
        }
    }
}

/// mcpc's peak resident size so far (`VmHWM`), KiB: `None` unless the process is mcpc (its
/// `Name`), so a reading of anything else that holds the pid is never taken for mcpc's (a
/// forked child keeps its parent's `VmHWM`, this test process's hundreds of MiB, until it has
/// run `exec`).
fn peak_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let name = status.lines().find_map(|l| l.strip_prefix("Name:"))?;
    if name.trim() != "mcpc" {
        return None;
    }
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
}

/// A plain `GET` of an `http://` URL (one request, `Connection: close`): the status and the
/// `Location` header, if any. The test "browser": it follows nothing by itself.
pub fn http_get(url: &str) -> Option<(u16, Option<String>)> {
    let rest = url.strip_prefix("http://")?;
    let split = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(split);
    let path = if path.is_empty() { "/" } else { path };
    let mut stream = TcpStream::connect(authority).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut head = Vec::new();
    let mut reader = BufReader::new(stream).take(64 << 10);
    let mut line = String::new();
    let mut status = None;
    let mut location = None;
    while reader.read_line(&mut line).ok()? > 0 {
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if status.is_none() {
            status = l.split(' ').nth(1).and_then(|s| s.parse().ok());
        } else if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("location")
        {
            location = Some(v.trim().to_owned());
        }
        head.push(l.to_owned());
        line.clear();
    }
    Some((status?, location))
}

/// The value of query parameter `name` of `url`, percent-decoded (`+` is a space).
pub fn query_param(url: &str, name: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%' && i + 2 < bytes.len())
            .then(|| std::str::from_utf8(&bytes[i + 1..i + 3]).ok())
            .flatten()
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (_, Some(b)) => {
                out.push(b);
                i += 3;
                continue;
            }
            (b'+', None) => out.push(b' '),
            (b, None) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The test browser: given the authorization URL mcpc printed (followed only on
/// `http://127.0.0.1`), asks it and brings its redirect back to mcpc's listener (also on
/// `http://127.0.0.1`). What happened, for the failure messages.
pub fn browse(authorize: &str) -> Vec<String> {
    let mut log = Vec::new();
    if !authorize.starts_with("http://127.0.0.1:") {
        log.push(format!("not followed: {authorize}"));
        return log;
    }
    let back = http_get(authorize);
    log.push(format!("authorize: {back:?}"));
    if let Some((302, Some(to))) = back {
        if to.starts_with("http://127.0.0.1:") {
            log.push(format!("callback: {:?}", http_get(&to)));
        } else {
            log.push(format!("callback not followed: {to}"));
        }
    }
    log
}
