//! A forced era (`EraMode::Legacy`, `EraMode::Modern`): spoken when the server speaks it, a
//! typed connect error when it does not, over stdio and HTTP.

use super::*;

#[tokio::test]
async fn modern_forced_speaks_to_a_modern_server() {
    let (client, mut feed) = connect(over_stdio(ECHO, &["--era", "modern"], EraMode::Modern)).await;
    assert_modern(&client);
    assert!(!states(&mut feed).contains(&ConnState::Initializing));
    exercise(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn legacy_forced_speaks_the_handshake_to_a_dual_server() {
    let (client, mut feed) = connect(over_stdio(ECHO, &["--era", "dual"], EraMode::Legacy)).await;
    assert_legacy(&client);
    assert!(!states(&mut feed).contains(&ConnState::Probing));
    exercise(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn legacy_forced_against_a_modern_server_fails_to_connect() {
    let e = connect_error(over_stdio(ECHO, &["--era", "modern"], EraMode::Legacy)).await;
    assert!(
        matches!(&e.cause, Failure::Refused(rpc) if rpc.code == -32022),
        "{e:?}"
    );
}

#[tokio::test]
async fn modern_forced_against_a_legacy_server_is_not_modern() {
    let e = connect_error(over_stdio(ECHO, &["--probe", "error"], EraMode::Modern)).await;
    assert!(matches!(&e.cause, Failure::NotModern { .. }), "{e:?}");
    let e = connect_error(over_stdio(ECHO, &["--probe", "garbage"], EraMode::Modern)).await;
    assert!(matches!(&e.cause, Failure::NotModern { .. }), "{e:?}");
}

#[tokio::test]
async fn modern_forced_against_a_silent_legacy_server_times_out_with_the_bound() {
    let timeout = Duration::from_millis(300);
    let started = tokio::time::Instant::now();
    let e = connect_error(
        over_stdio(ECHO, &["--probe", "silent"], EraMode::Modern).probe_timeout(timeout),
    )
    .await;
    assert!(
        matches!(&e.cause, Failure::ProbeTimeout { after } if *after == timeout),
        "{e:?}"
    );
    assert!(started.elapsed() >= timeout);
}

#[tokio::test]
async fn modern_forced_without_a_common_version_fails_to_connect() {
    let e = connect_error(over_stdio(
        ECHO,
        &["--era", "modern", "--modern-versions", "2099-01-01"],
        EraMode::Modern,
    ))
    .await;
    assert!(
        matches!(&e.cause, Failure::NoCommonVersion { offered } if offered == &["2099-01-01"]),
        "{e:?}"
    );
}

#[tokio::test]
async fn modern_forced_against_a_legacy_http_server_fails_to_connect() {
    let server = HttpServer::start(&["--http", "127.0.0.1:0"]).await;
    let e = connect_error(over_http(&server.url, EraMode::Modern)).await;
    assert!(matches!(&e.cause, Failure::NotModern { .. }), "{e:?}");
}

#[tokio::test]
async fn legacy_forced_against_a_modern_http_server_fails_to_connect() {
    let server = HttpServer::start(&["--era", "modern", "--http", "127.0.0.1:0"]).await;
    let e = connect_error(over_http(&server.url, EraMode::Legacy)).await;
    assert!(
        matches!(&e.cause, Failure::Refused(rpc) if rpc.code == -32022),
        "{e:?}"
    );
}

#[tokio::test]
async fn legacy_forced_never_probes() {
    // A server that would die of the probe lives: nothing but the handshake is sent.
    let dir = TempDir::new("never");
    let pids = dir.file("pids");
    let (client, mut feed) = connect(over_stdio(
        ECHO,
        &["--probe", "die", "--pid-file", &pids],
        EraMode::Legacy,
    ))
    .await;
    assert_legacy(&client);
    assert_eq!(
        states(&mut feed),
        [
            ConnState::Starting,
            ConnState::Initializing,
            ConnState::Ready
        ]
    );
    exercise(&client).await;
    assert_eq!(pids_in(Path::new(&pids)).len(), 1);
    finish(client).await;
}

#[tokio::test]
async fn modern_forced_does_not_respawn_a_server_that_dies_of_the_probe_as_legacy() {
    let dir = TempDir::new("modern-die");
    let pids = dir.file("pids");
    let e = connect_error(over_stdio(
        ECHO,
        &["--probe", "die", "--pid-file", &pids],
        EraMode::Modern,
    ))
    .await;
    assert!(
        matches!(
            &e.cause,
            Failure::Transport(mcp_runtime::TransportError::ChildExited { code: Some(3), .. })
        ),
        "{e:?}"
    );
    assert_eq!(pids_in(Path::new(&pids)).len(), 1);
}

#[tokio::test]
async fn modern_forced_over_http_against_a_silent_legacy_server_times_out_with_the_bound() {
    let timeout = Duration::from_millis(300);
    let server = HttpServer::start(&["--http", "127.0.0.1:0", "--probe", "silent"]).await;
    let e = connect_error(over_http(&server.url, EraMode::Modern).probe_timeout(timeout)).await;
    assert!(
        matches!(&e.cause, Failure::ProbeTimeout { after } if *after == timeout),
        "{e:?}"
    );
}

#[tokio::test]
async fn modern_forced_over_http_against_an_sse_only_server_fails_to_connect() {
    let server = HttpServer::start(&["--sse", "127.0.0.1:0"]).await;
    let e = connect_error(over_http(&server.url, EraMode::Modern)).await;
    assert!(matches!(&e.cause, Failure::NotModern { .. }), "{e:?}");
}
