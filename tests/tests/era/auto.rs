//! Auto over stdio: the era found for each kind of server (modern, legacy however it
//! reacts to the probe, dual), and the modern calls that follow: progress, timeouts, what each
//! request says about the client, pagination and completion.

use super::*;

#[tokio::test]
async fn auto_finds_a_modern_server_over_stdio_without_initialize() {
    let (client, mut feed) = connect(over_stdio(ECHO, &["--era", "modern"], EraMode::Auto)).await;
    assert_modern(&client);
    assert_eq!(states(&mut feed), PROBED_MODERN);
    exercise(&client).await;
    // The server never saw a handshake: its session has the modern version, no initialize.
    let info = mcp_tests::session_info(&client).await;
    assert_eq!(info["protocolVersion"], MODERN, "{info}");
    assert_eq!(info["initializeCount"], 0, "{info}");
    finish(client).await;
}

/// Connects in Auto to a legacy server with `--probe mode` (and `extra` flags); asserts it is
/// legacy, went through probing then initializing, and works.
async fn auto_falls_back(mode: &str, extra: &[&str], probe_timeout: Duration) -> Vec<ConnState> {
    let mut args = vec!["--probe", mode];
    args.extend_from_slice(extra);
    let builder = over_stdio(ECHO, &args, EraMode::Auto).probe_timeout(probe_timeout);
    let (client, mut feed) = connect(builder).await;
    assert_legacy(&client);
    let path = states(&mut feed);
    exercise(&client).await;
    let info = mcp_tests::session_info(&client).await;
    assert_eq!(info["initializeCount"], 1, "{info}");
    finish(client).await;
    path
}

#[tokio::test]
async fn auto_falls_back_on_the_same_process_when_discover_is_an_error() {
    let path = auto_falls_back("error", &[], Duration::from_secs(3)).await;
    assert_eq!(path, PROBED_THEN_HANDSHAKE);
}

#[tokio::test]
async fn auto_falls_back_when_discover_answers_garbage() {
    let path = auto_falls_back("garbage", &[], Duration::from_secs(3)).await;
    assert_eq!(path, PROBED_THEN_HANDSHAKE);
}

#[tokio::test]
async fn auto_falls_back_after_the_probe_timeout_when_discover_is_unanswered() {
    let timeout = Duration::from_millis(300);
    let dir = TempDir::new("silent");
    let pids = dir.file("pids");
    let started = tokio::time::Instant::now();
    let path = auto_falls_back("silent", &["--pid-file", &pids], timeout).await;
    let took = started.elapsed();
    assert!(
        took >= timeout,
        "ready after {took:?}, before the probe timeout"
    );
    assert_eq!(path, PROBED_THEN_HANDSHAKE);
    // The same process: silence is no reason to respawn.
    assert_eq!(pids_in(Path::new(&pids)).len(), 1);
}

#[tokio::test]
async fn auto_respawns_a_server_that_dies_of_the_probe_and_takes_it_for_legacy() {
    let dir = TempDir::new("die");
    let pids = dir.file("pids");
    let builder = over_stdio(
        ECHO,
        &["--probe", "die", "--pid-file", &pids],
        EraMode::Auto,
    );
    let (client, mut feed) = connect(builder).await;
    assert_legacy(&client);
    let path = states(&mut feed);
    assert_eq!(
        path,
        [
            ConnState::Starting,
            ConnState::Probing,
            ConnState::Starting,
            ConnState::Initializing,
            ConnState::Ready
        ],
        "respawned at once (no backoff), then the handshake"
    );
    exercise(&client).await;
    let listed = pids_in(Path::new(&pids));
    assert_eq!(listed.len(), 2, "{listed:?}");
    let info = mcp_tests::session_info(&client).await;
    assert_eq!(info["pid"].as_u64(), Some(u64::from(listed[1])), "{info}");
    assert!(pid_gone(listed[0]), "the first server is reaped");
    finish(client).await;
    assert!(eventually(WAIT, || pid_gone(listed[1])).await);
}

#[tokio::test]
async fn auto_speaks_modern_to_a_dual_server() {
    let (client, mut feed) = connect(over_stdio(ECHO, &["--era", "dual"], EraMode::Auto)).await;
    assert_modern(&client);
    assert_eq!(states(&mut feed), PROBED_MODERN);
    exercise(&client).await;
    let info = mcp_tests::session_info(&client).await;
    assert_eq!(info["initializeCount"], 0, "{info}");
    finish(client).await;
}

#[tokio::test]
async fn auto_without_a_common_modern_version_fails_to_connect() {
    // The server is recognisably modern (-32022 with `supported`), so no fallback either.
    let e = connect_error(over_stdio(
        ECHO,
        &["--era", "modern", "--modern-versions", "2099-01-01"],
        EraMode::Auto,
    ))
    .await;
    assert!(
        matches!(&e.cause, Failure::NoCommonVersion { offered } if offered == &["2099-01-01"]),
        "{e:?}"
    );
}

#[tokio::test]
async fn a_modern_server_offering_ours_among_others_is_spoken_to_at_ours() {
    let (client, _feed) = connect(over_stdio(
        ECHO,
        &[
            "--era",
            "modern",
            "--modern-versions",
            "2099-01-01,2026-07-28",
        ],
        EraMode::Auto,
    ))
    .await;
    assert_modern(&client);
    exercise(&client).await;
    finish(client).await;
}

#[tokio::test]
async fn modern_calls_over_stdio_report_progress_and_time_out_alone() {
    let (client, _feed) = connect(over_stdio(ECHO, &["--era", "modern"], EraMode::Auto)).await;
    assert_modern(&client);
    progress_and_timeout(&client).await;
    // The timed-out call was cancelled on the wire.
    let info = mcp_tests::session_info(&client).await;
    assert_eq!(
        info["cancelled"].as_array().map(Vec::len),
        Some(1),
        "{info}"
    );
    finish(client).await;
}

#[tokio::test]
async fn modern_requests_carry_the_clients_info_and_modern_capabilities() {
    let handlers = Handlers::new()
        .roots(Roots::new([Root::new("file:///tmp")]))
        .sampling(|_p, _cx| async { Ok(mcp_runtime::CreateMessageResult::text("m", "never")) })
        .elicitation(|_p, _cx| async { Ok(ElicitResult::decline()) });
    let builder = over_stdio(ECHO, &["--era", "modern"], EraMode::Auto)
        .client_info("era-test", "9.9")
        .handler(handlers);
    let (client, _feed) = connect(builder).await;
    assert_modern(&client);
    let info = mcp_tests::session_info(&client).await;
    assert_eq!(
        info["clientInfo"],
        json!({"name": "era-test", "version": "9.9"}),
        "{info}"
    );
    // 2026-07-28: `roots` has no `listChanged`; every capability is an object.
    assert_eq!(
        info["clientCapabilities"],
        json!({"roots": {}, "sampling": {}, "elicitation": {"form": {}}}),
        "{info}"
    );
    finish(client).await;
}

#[tokio::test]
async fn modern_pagination_and_completion_work() {
    let (client, _feed) = connect(over_stdio(
        ECHO,
        &["--era", "modern", "--page-size", "2"],
        EraMode::Auto,
    ))
    .await;
    assert_modern(&client);
    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.tools.len(), 2);
    assert!(first.next_cursor.is_some());
    let all = client.list_all_tools().await.unwrap();
    assert!(all.len() > 2, "{all:?}");
    let mut names: Vec<&str> = all.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), all.len(), "no tool twice");
    assert!(names.contains(&"echo") && names.contains(&"always_input"));
    let done = client
        .complete(
            mcp_runtime::CompleteRef::Prompt("greeting".into()),
            "name",
            "al",
        )
        .await
        .expect("completion/complete");
    assert_eq!(done.completion.values, ["alice", "alfred"]);
    finish(client).await;
}
