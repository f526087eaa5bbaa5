//! The era verdict across reconnects: a legacy verdict kept, and decided again when a
//! restarted server refuses `initialize` as a modern one; a modern verdict confirmed by probing
//! again; a tentative legacy verdict dropped when its handshake fails.

use super::*;

#[tokio::test]
async fn a_legacy_verdict_is_kept_when_the_server_restarts() {
    let dir = TempDir::new("kept");
    let pids = dir.file("pids");
    let builder = over_stdio(CHAOS, &["--pid-file", &pids], EraMode::Auto);
    let (client, mut feed) = connect(builder).await;
    assert_legacy(&client);
    assert_eq!(states(&mut feed), PROBED_THEN_HANDSHAKE);
    // The server dies of a tool call; the client reconnects on its own.
    let err = client.call_tool("die", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::ConnectionLost(_)), "{err:?}");
    let second = until_ready(&mut feed).await;
    assert_eq!(
        second,
        [
            ConnState::Backoff,
            ConnState::Starting,
            ConnState::Initializing,
            ConnState::Ready
        ],
        "no server/discover after the restart"
    );
    assert_legacy(&client);
    let r = client
        .call_tool("echo", json!({"message": "again"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: again");
    assert_eq!(pids_in(Path::new(&pids)).len(), 2);
    finish(client).await;
}

#[tokio::test]
async fn a_legacy_verdict_is_decided_again_when_initialize_gets_a_modern_refusal() {
    let dir = TempDir::new("upgrade");
    let marker = dir.file("started");
    // The first process is a legacy chaos server; every later one a modern echo server.
    let script = format!(
        "if [ -e '{marker}' ]; then exec '{ECHO}' --era modern; \
         else touch '{marker}'; exec '{CHAOS}'; fi"
    );
    let builder = over_stdio("sh", &["-c", &script], EraMode::Auto);
    let (client, mut feed) = connect(builder).await;
    assert_legacy(&client);
    assert_eq!(states(&mut feed), PROBED_THEN_HANDSHAKE);
    let err = client.call_tool("die", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::ConnectionLost(_)), "{err:?}");
    let second = until_ready(&mut feed).await;
    assert_eq!(
        second,
        [
            ConnState::Backoff,
            ConnState::Starting,
            ConnState::Initializing,
            ConnState::Probing,
            ConnState::Ready
        ],
        "initialize (the kept verdict), refused with -32022, then server/discover"
    );
    assert_modern(&client);
    exercise(&client).await;
    finish(client).await;
}

/// A shell command whose `n`th process (from 1, counted in `dir`) runs `commands[n - 1]`
/// (the last one for every later process).
fn by_generation(dir: &TempDir, commands: &[String]) -> String {
    let count = dir.file("count");
    let mut script = format!("echo x >> '{count}'; n=$(wc -l < '{count}'); ");
    for (i, c) in commands.iter().enumerate() {
        if i + 1 == commands.len() {
            script.push_str(&format!("exec {c}"));
        } else {
            script.push_str(&format!("if [ \"$n\" -eq {} ]; then exec {c}; fi; ", i + 1));
        }
    }
    script
}

#[tokio::test]
async fn a_modern_verdict_is_confirmed_by_probing_the_restarted_server() {
    let dir = TempDir::new("modern-kept");
    let pids = dir.file("pids");
    let builder = over_stdio(
        CHAOS,
        &["--era", "modern", "--pid-file", &pids],
        EraMode::Auto,
    );
    let (client, mut feed) = connect(builder).await;
    assert_eq!(client.era(), Some(Era::Modern));
    assert_eq!(states(&mut feed), PROBED_MODERN);
    let err = client.call_tool("die", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::ConnectionLost(_)), "{err:?}");
    assert_eq!(
        until_ready(&mut feed).await,
        [
            ConnState::Backoff,
            ConnState::Starting,
            ConnState::Probing,
            ConnState::Ready
        ]
    );
    assert_eq!(client.era(), Some(Era::Modern));
    let r = client
        .call_tool("echo", json!({"message": "back"}))
        .await
        .unwrap();
    assert_eq!(r.text(), "Echo: back");
    assert_eq!(pids_in(Path::new(&pids)).len(), 2);
    finish(client).await;
}

#[tokio::test]
async fn a_modern_server_restarted_as_a_legacy_one_is_spoken_to_in_the_handshake() {
    let dir = TempDir::new("downgrade");
    let script = by_generation(
        &dir,
        &[
            format!("'{CHAOS}' --era modern"),
            format!("'{ECHO}' --probe error"),
        ],
    );
    let (client, mut feed) = connect(over_stdio("sh", &["-c", &script], EraMode::Auto)).await;
    assert_eq!(client.era(), Some(Era::Modern));
    assert_eq!(states(&mut feed), PROBED_MODERN);
    let err = client.call_tool("die", json!({})).await.unwrap_err();
    assert!(matches!(err, Error::ConnectionLost(_)), "{err:?}");
    assert_eq!(
        until_ready(&mut feed).await,
        [
            ConnState::Backoff,
            ConnState::Starting,
            ConnState::Probing,
            ConnState::Initializing,
            ConnState::Ready
        ]
    );
    assert_legacy(&client);
    exercise(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn a_tentative_legacy_verdict_is_dropped_when_the_handshake_fails() {
    let dir = TempDir::new("tentative");
    // 1: dies of the probe; 2 (the respawn, taken for legacy): refuses initialize;
    // 3 and later: a modern server, which must be probed, not sent initialize.
    let script = by_generation(
        &dir,
        &[
            format!("'{ECHO}' --probe die"),
            format!("'{ECHO}' --handshake error"),
            format!("'{ECHO}' --era modern"),
        ],
    );
    let builder = over_stdio("sh", &["-c", &script], EraMode::Auto);
    let mut feed = builder.transitions();
    let client = builder.connect_lazy();
    let path = until_ready(&mut feed).await;
    assert_eq!(
        path,
        [
            ConnState::Probing,
            ConnState::Starting,
            ConnState::Initializing,
            ConnState::Backoff,
            ConnState::Starting,
            ConnState::Probing,
            ConnState::Ready
        ]
    );
    assert_modern(&client);
    exercise(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn over_http_a_legacy_verdict_is_decided_again_when_the_server_becomes_modern() {
    let legacy = HttpServer::start(&["--http", "127.0.0.1:0"]).await;
    let url = legacy.url.clone();
    let addr = legacy.addr();
    let (client, mut feed) = connect(over_http(&url, EraMode::Auto)).await;
    assert_legacy(&client);
    assert_eq!(states(&mut feed), PROBED_THEN_HANDSHAKE);
    legacy.kill().await;
    let modern = HttpServer::start(&["--era", "modern", "--http", &addr]).await;
    assert_eq!(modern.url, url);
    // The client finds out at its next call (or when its GET stream breaks), reconnects, and
    // its `initialize` is refused with -32022: it probes again and speaks the modern era.
    let found = tokio::time::timeout(WAIT, async {
        loop {
            if client.era() == Some(Era::Modern) && client.state() == ConnState::Ready {
                return;
            }
            let _ = client.call_tool("echo", json!({"message": "x"})).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    let mut path = Vec::new();
    while let Some(t) = feed.try_recv() {
        if t.from() != t.to() {
            path.push((t.to(), t.cause.clone()));
        }
    }
    let tail = &path[path.len().saturating_sub(6)..];
    assert!(
        found.is_ok(),
        "not modern: era {:?}, state {}, last error {:?}; {} transitions, the last: {tail:?}",
        client.era(),
        client.state(),
        client.last_error(),
        path.len()
    );
    exercise(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn over_http_a_legacy_verdict_is_kept_when_the_server_restarts() {
    let first = HttpServer::start(&["--http", "127.0.0.1:0"]).await;
    let (url, addr) = (first.url.clone(), first.addr());
    let (client, mut feed) = connect(over_http(&url, EraMode::Auto)).await;
    assert_legacy(&client);
    assert_eq!(states(&mut feed), PROBED_THEN_HANDSHAKE);
    first.kill().await;
    let second = HttpServer::start(&["--http", &addr]).await;
    assert_eq!(second.url, url);
    let back = tokio::time::timeout(WAIT, async {
        loop {
            if let Ok(r) = client.call_tool("echo", json!({"message": "x"})).await {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("calls work again");
    assert_eq!(back.text(), "Echo: x");
    let mut path = Vec::new();
    while let Some(t) = feed.try_recv() {
        if t.from() != t.to() {
            path.push(t.to());
        }
    }
    assert!(
        !path.contains(&ConnState::Probing),
        "probed again: {path:?}"
    );
    assert!(path.contains(&ConnState::Initializing), "{path:?}");
    assert_legacy(&client);
    finish(client).await;
}
