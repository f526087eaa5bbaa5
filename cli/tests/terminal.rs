//! At a real terminal, driven through tmux: an interactive elicitation form, and Ctrl-C
//! during a long call with a progress bar. Skipped (with a notice) when tmux is missing.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;

/// One tmux server of its own (a private socket), killed (and its socket removed) on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// `None` (after a notice) when tmux is not installed.
    fn start(name: &str) -> Option<Tmux> {
        let available = Command::new("tmux")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success());
        if !available {
            eprintln!("SKIPPED: tmux is not installed (apt-get install -y tmux)");
            return None;
        }
        let t = Tmux {
            socket: std::env::temp_dir()
                .join(format!("mcpc-test-{}-{name}.sock", std::process::id()))
                .to_string_lossy()
                .into_owned(),
        };
        t.run(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "160",
            "-y",
            "40",
            "sleep",
            "60",
        ]);
        t.run(&["set-option", "-g", "remain-on-exit", "on"]);
        Some(t)
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-S", &self.socket, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux runs");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs a program (no shell) in the pane.
    fn spawn(&self, program: &str, args: &[&str]) {
        let mut all = vec!["respawn-pane", "-k", "-t", "t", program];
        all.extend_from_slice(args);
        self.run(&all);
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "t"])
    }

    fn keys(&self, keys: &[&str]) {
        let mut all = vec!["send-keys", "-t", "t"];
        all.extend_from_slice(keys);
        self.run(&all);
    }

    fn text(&self, text: &str) {
        self.run(&["send-keys", "-t", "t", "-l", text]);
    }

    /// Waits until the screen satisfies `f`.
    fn wait_for(&self, what: &str, f: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if f(&screen) {
                return screen;
            }
            assert!(
                start.elapsed() < Duration::from_secs(8),
                "timed out waiting for {what}; screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the pane's program to exit; its exit code. tmux's `pane_dead_status` is
    /// used when tmux has it; tmux does not always reap its pane's process promptly (seen on
    /// sandboxed machines), so a zombie's exit code is also read from `/proc/PID/stat`.
    fn exit_code(&self) -> i32 {
        let start = Instant::now();
        loop {
            let status = self.run(&[
                "display",
                "-p",
                "-t",
                "t",
                "#{pane_dead} #{pane_dead_status} #{pane_pid}",
            ]);
            let fields: Vec<&str> = status.split_whitespace().collect();
            match fields.as_slice() {
                ["1", code, _] => {
                    if let Ok(code) = code.parse() {
                        return code;
                    }
                }
                ["1", pid] | [_, pid] => {
                    if let Some(code) = zombie_exit_code(pid) {
                        return code;
                    }
                }
                _ => {}
            }
            assert!(
                start.elapsed() < Duration::from_secs(8),
                "mcpc did not exit ({status}); screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The exit code of a process that exited but was not reaped yet (Linux `/proc`).
fn zombie_exit_code(pid: &str) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses: field 3 (state) onwards.
    let rest: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    if rest.first() != Some(&"Z") {
        return None;
    }
    // Field 52: the exit status as waitpid(2) reports it.
    let status: i32 = rest.get(52 - 3)?.parse().ok()?;
    (status & 0x7f == 0).then_some((status >> 8) & 0xff)
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-S", &self.socket, "kill-server"])
            .output();
        let _ = std::fs::remove_file(&self.socket);
    }
}

fn last_line(screen: &str) -> &str {
    screen
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
}

#[test]
fn an_elicitation_form_is_answered_at_the_terminal() {
    let Some(tmux) = Tmux::start("elicit") else {
        return;
    };
    let server = server(false);
    tmux.spawn(
        MCPC,
        &[
            "--stdio",
            &server,
            "tools",
            "call",
            "elicit",
            "message=Who are you?",
        ],
    );
    let screen = tmux.wait_for("the form", |s| s.contains("asks: Who are you?"));
    assert!(
        screen.contains("The server `"),
        "the server is named: {screen}"
    );
    assert!(screen.contains("!decline"), "{screen}");
    let (mut name_done, mut confirm_done) = (false, false);
    while !(name_done && confirm_done) {
        let screen = tmux.wait_for("a prompt", |s| {
            let l = last_line(s);
            (!name_done && l.contains("Name (string, required) [Ada]:"))
                || (!confirm_done && l.contains("Confirm (boolean) [Y/n]:"))
        });
        if last_line(&screen).contains("[Ada]:") {
            tmux.text("Grace");
            name_done = true;
        } else {
            tmux.text("n");
            confirm_done = true;
        }
        tmux.keys(&["Enter"]);
    }
    // Nothing is sent without an explicit accept.
    let screen = tmux.wait_for("the review", |s| {
        last_line(s).contains("Send it to the server? [a]ccept, [e]dit, [d]ecline or [c]ancel:")
    });
    assert!(
        screen.contains(r#"Your answer: {"confirm":false,"name":"Grace"}"#),
        "{screen}"
    );
    tmux.text("a");
    tmux.keys(&["Enter"]);
    let code = tmux.exit_code();
    let screen = tmux.screen();
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains(r#"{"action":"accept","content":{"confirm":false,"name":"Grace"}}"#),
        "{screen}"
    );
}

#[test]
fn ctrl_c_cancels_a_long_call_with_exit_130() {
    let Some(tmux) = Tmux::start("ctrlc") else {
        return;
    };
    let server = server(false);
    tmux.spawn(
        MCPC,
        &[
            "--stdio", &server, "tools", "call", "slow", "ms=20000", "steps=40",
        ],
    );
    // The progress bar is drawn at a terminal.
    let screen = tmux.wait_for("the progress bar", |s| {
        s.contains("slow [") && s.contains("/40")
    });
    assert!(screen.contains("step "), "{screen}");
    tmux.keys(&["C-c"]);
    let code = tmux.exit_code();
    let screen = tmux.screen();
    assert_eq!(code, 130, "{screen}");
    assert!(
        screen.contains("mcpc: tools call slow: cancelled"),
        "{screen}"
    );
}

#[test]
fn a_slow_server_start_shows_a_spinner_then_the_answer() {
    let Some(tmux) = Tmux::start("spinner") else {
        return;
    };
    let slow = format!("sh -c 'sleep 3; exec {}'", server(false));
    tmux.spawn(MCPC, &["--stdio", &slow, "info"]);
    let screen = tmux.wait_for("the spinner", |s| {
        s.contains("asking the server which protocol era it speaks (`sh -c")
    });
    assert!(
        !screen.contains("server        mcp-echo-server"),
        "{screen}"
    );
    let code = tmux.exit_code();
    let screen = tmux.screen();
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("era           legacy (handshake; the server is not a 2026-07-28 one"),
        "{screen}"
    );
    assert!(
        !screen.contains("asking the server which protocol era it speaks"),
        "the spinner is cleared: {screen}"
    );
}
