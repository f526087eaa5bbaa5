//! Progress of a long call: an indicatif bar on stderr when it is a terminal, plain lines
//! otherwise (on stderr, or on stdout for the demo's narrative). The server's progress
//! messages are cleaned (see [`crate::sanitize`]) on both paths.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use mcp_runtime::Progress;

use crate::sanitize::clean_line;

/// Where plain progress lines go when there is no bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// stderr (commands: stdout is for the result).
    Stderr,
    /// stdout, indented (the demo).
    Stdout,
}

/// Shows the progress notifications of one call; the bar appears with the first one.
pub struct ProgressView {
    bar: Option<ProgressBar>,
    terminal: bool,
    lines: Lines,
    label: String,
    seen: usize,
}

impl ProgressView {
    /// A view for the call `label`.
    pub fn new(label: impl Into<String>, lines: Lines) -> Self {
        ProgressView {
            bar: None,
            terminal: std::io::stderr().is_terminal(),
            lines,
            label: label.into(),
            seen: 0,
        }
    }

    /// How many notifications it showed.
    pub fn seen(&self) -> usize {
        self.seen
    }

    /// Shows one notification.
    pub fn update(&mut self, p: &Progress) {
        self.seen += 1;
        if !self.terminal {
            let total = p.total.map(|t| format!("/{t}")).unwrap_or_default();
            let message = p
                .message
                .as_deref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default();
            let line = format!("progress {}{total}{message}", p.progress);
            match self.lines {
                Lines::Stderr => errln!("mcpc: {}: {line}", self.label),
                Lines::Stdout => outln!("      {line}"),
            }
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let bar = match p.total {
                Some(_) => ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr())
                    .with_style(
                        ProgressStyle::with_template(
                            "  {prefix} [{bar:30}] {pos}/{len} {msg} ({elapsed})",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_bar())
                        .progress_chars("=> "),
                    ),
                None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
                    .with_style(
                        ProgressStyle::with_template(
                            "  {prefix} {spinner} {pos} {msg} ({elapsed})",
                        )
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                    ),
            };
            bar.set_prefix(clean_line(&self.label));
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        if let Some(total) = p.total {
            bar.set_length(total.max(0.0) as u64);
        }
        bar.set_position(p.progress.max(0.0) as u64);
        bar.set_message(clean_line(p.message.as_deref().unwrap_or_default()));
    }

    /// Shows the status of the task the call runs as: a line each time it changes, or the
    /// spinner's message on a terminal. The server's words are cleaned like progress.
    pub fn task(&mut self, s: &mcp_runtime::TaskStatus) {
        let message = s
            .message
            .as_deref()
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        let line = format!("task {} {}{message}", s.task_id, s.state.as_str());
        if !self.terminal {
            match self.lines {
                Lines::Stderr => errln!("mcpc: {}: {line}", self.label),
                Lines::Stdout => outln!("      {line}"),
            }
            return;
        }
        let bar = self.bar.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()).with_style(
                ProgressStyle::with_template("  {prefix} {spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar.set_prefix(clean_line(&self.label));
            bar.enable_steady_tick(Duration::from_millis(100));
            bar
        });
        bar.set_message(clean_line(&line));
    }

    /// Ends the bar, leaving it on the screen.
    pub fn finish(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish();
        }
    }

    /// Ends the bar, removing it from the screen.
    pub fn clear(&mut self) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
    }
}

impl Drop for ProgressView {
    fn drop(&mut self) {
        self.clear();
    }
}
