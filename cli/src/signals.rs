//! The signals that end mcpc: SIGINT (Ctrl-C), SIGTERM and SIGHUP, as something many places
//! can wait for. Whatever is running then stops its server (its process group is its own, so
//! the terminal's signals never reach it) and mcpc exits with 128 + the signal's number
//! (SIGINT during `watch` and `state`: 0).

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::watch;

/// A signal mcpc caught.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caught {
    /// SIGINT (Ctrl-C).
    Interrupt,
    /// SIGTERM.
    Terminate,
    /// SIGHUP (the terminal went away).
    HangUp,
}

impl Caught {
    /// The signal's number.
    pub fn number(self) -> i32 {
        match self {
            Caught::Interrupt => 2,
            Caught::Terminate => 15,
            Caught::HangUp => 1,
        }
    }

    /// The signal's name.
    pub fn name(self) -> &'static str {
        match self {
            Caught::Interrupt => "SIGINT",
            Caught::Terminate => "SIGTERM",
            Caught::HangUp => "SIGHUP",
        }
    }
}

/// The first of SIGINT, SIGTERM, SIGHUP that arrived, for anyone to wait for.
#[derive(Clone, Debug)]
pub struct Interrupt(watch::Receiver<Option<Caught>>);

impl Interrupt {
    /// Starts listening for the three signals now (inside the tokio runtime).
    pub fn install() -> std::io::Result<Self> {
        let (tx, rx) = watch::channel(None);
        for (kind, caught) in [
            (SignalKind::interrupt(), Caught::Interrupt),
            (SignalKind::terminate(), Caught::Terminate),
            (SignalKind::hangup(), Caught::HangUp),
        ] {
            let mut stream = signal(kind)?;
            let tx = tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    tx.send_if_modified(|first| {
                        let fresh = first.is_none();
                        first.get_or_insert(caught);
                        fresh
                    });
                }
            });
        }
        Ok(Interrupt(rx))
    }

    /// Resolves with the first signal that arrived (at once if one already did).
    pub async fn fired(&self) -> Caught {
        let mut rx = self.0.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(caught) => caught.unwrap_or(Caught::Interrupt),
            Err(_) => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_128_plus_the_number() {
        assert_eq!(128 + Caught::Interrupt.number(), 130);
        assert_eq!(128 + Caught::Terminate.number(), 143);
        assert_eq!(128 + Caught::HangUp.number(), 129);
        assert_eq!(Caught::HangUp.name(), "SIGHUP");
    }
}
